package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errNoRedisServer means there is no redis-server binary on PATH to start a private server with.
var errNoRedisServer = errors.New("redis-server is not on PATH")

// private is the redis-server a test binary starts for itself when EXQ_TEST_REDIS_URL is unset:
// one per process, started by the first test that asks for Redis, stopped by Main.
var private struct {
	once sync.Once
	url  string
	err  error

	mu  sync.Mutex
	cmd *exec.Cmd
	dir string
}

// privateURL starts the private redis-server once and returns its URL.
func privateURL() (string, error) {
	private.once.Do(func() {
		private.url, private.err = startPrivate()
	})
	return private.url, private.err
}

// startPrivate starts redis-server on a free loopback port (never 6379, the shared default),
// without persistence, in a temporary folder. The port can be taken between choosing and
// binding it, so it tries a few.
func startPrivate() (string, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "", errNoRedisServer
	}
	dir, err := os.MkdirTemp("", "exq-test-redis-")
	if err != nil {
		return "", err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freeLoopbackPort()
		if err != nil {
			lastErr = err
			continue
		}
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "redis.log")
		// If this process dies without stopping it (a panic, a SIGKILL), the kernel kills the
		// server too; Main stops it by pid in the normal case.
		cmd.SysProcAttr = diesWithParent()
		if err := cmd.Start(); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("start redis-server: %w", err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitPing(addr, 10*time.Second); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			lastErr = fmt.Errorf("redis-server on %s did not answer PING: %v\n%s", addr, err, log)
			continue
		}
		private.mu.Lock()
		private.cmd, private.dir = cmd, dir
		private.mu.Unlock()
		return "redis://" + addr + "/0", nil
	}
	_ = os.RemoveAll(dir)
	return "", lastErr
}

// freeLoopbackPort returns a loopback port that was free a moment ago, never 6379.
func freeLoopbackPort() (int, error) {
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if port != 6379 {
			return port, nil
		}
	}
}

// waitPing waits until a Redis at addr answers PING with PONG. It speaks RESP on a plain
// connection, so no client pool (and no goroutine) outlives it.
func waitPing(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// stopPrivate kills the private server by its pid, if this process started one, and removes its
// folder. There is nothing to keep: the server never persists.
func stopPrivate() error {
	private.mu.Lock()
	defer private.mu.Unlock()
	if private.cmd == nil {
		return nil
	}
	err := private.cmd.Process.Kill()
	_ = private.cmd.Wait()
	private.cmd = nil
	if rmErr := os.RemoveAll(private.dir); err == nil {
		err = rmErr
	}
	return err
}
