// Command client shows an enqueue-only client in a process of its own, as a web front end or a
// cron script is: the program starts a worker node, then runs itself again with -role=client.
// That second process connects with exq.NewClient (which runs no goroutines and fetches
// nothing), enqueues five jobs, prints their jids and exits; the node runs them. It exits 0
// once all five ran.
//
//	go run ./examples/client                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/client  # a real Redis
//
// Either way the client process gets the node's REDIS_URL (the in-process Redis' address).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

// Welcome is the args of Mail.Welcome jobs. Both processes use this type.
type Welcome struct {
	To string `json:"to"`
}

func (Welcome) Class() string { return "Mail.Welcome" } // the job's class

const namespace = "exq-example-client"

func main() {
	role := flag.String("role", "node", "node: run the jobs (and start a client process); client: enqueue them")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	switch *role {
	case "node":
		err = node(ctx)
	case "client":
		err = client(ctx, os.Getenv("REDIS_URL"))
	default:
		err = fmt.Errorf("-role=%s: want node or client", *role)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// client enqueues five jobs through an exq.Client and prints their jids, one a line.
func client(ctx context.Context, url string) error {
	if url == "" {
		return fmt.Errorf("client: -role=client needs REDIS_URL")
	}
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url, Namespace: namespace})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, to := range []string{"ada", "grace", "linus", "barbara", "ken"} {
		jid, err := exq.EnqueueArgs(ctx, c, Welcome{To: to + "@example.com"})
		if err != nil {
			return err
		}
		fmt.Println(jid)
	}
	return nil
}

// node runs a node, runs the client process and waits until the node has run its jobs.
func node(ctx context.Context) error {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		m, err := miniredis.Run()
		if err != nil {
			return err
		}
		defer m.Close()
		url = "redis://" + m.Addr() + "/0"
		fmt.Println("REDIS_URL is unset: using an in-process Redis (miniredis) at", m.Addr())
	}
	succeeded := make(chan string, 64)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL:  url,
		Namespace: namespace,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Workers: map[string]exq.Worker{Welcome{}.Class(): exq.Typed(func(ctx context.Context, job *exq.Job, w Welcome) error {
			fmt.Printf("node   (pid %d) sent the welcome mail to %s\n", os.Getpid(), w.To)
			return nil
		})},
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobSucceeded {
				succeeded <- ev.JID
			}
		}},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, "-role=client")
	cmd.Env = append(os.Environ(), "REDIS_URL="+url)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("client process: %w", err)
	}
	want := map[string]bool{}
	for lines := bufio.NewScanner(stdout); lines.Scan(); {
		want[lines.Text()] = true
		fmt.Printf("client (pid %d) enqueued jid=%s\n", cmd.Process.Pid, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("client process: %w", err)
	}
	if len(want) != 5 {
		return fmt.Errorf("client process enqueued %d jobs, want 5", len(want))
	}
	for n := len(want); n > 0; {
		select {
		case jid := <-succeeded:
			if want[jid] {
				want[jid], n = false, n-1
			}
		case <-ctx.Done():
			return fmt.Errorf("node: %d of the client's 5 jobs did not run within 10 s", n)
		}
	}
	fmt.Println("the node ran all 5 jobs the client process enqueued")
	return nil
}
