// Command modproxy writes a GOPROXY=file:// directory from this repository's git history, so
// that CI can build exq's modules the way a user outside the repo does: with no workspace and
// no replace, each module fetched as the zip the Go module proxy would serve for a commit.
//
// It publishes every module of the repo at the pseudo-version of HEAD, and each module of the
// repo at every version another module requires, made from the commit that version names. It
// prints HEAD's pseudo-version.
//
//	go run . -repo ../.. -out /tmp/proxy
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

const core = "github.com/exqgo/exq"

// modules are the repo's modules, by directory relative to its root.
var modules = []string{".", "exqprom", "exqotel", "exqpg", "webtest", "bench", "examples/prometheus"}

func main() {
	repo := flag.String("repo", ".", "the repository's root (a git checkout)")
	out := flag.String("out", "", "the proxy directory to write (created)")
	flag.Parse()
	if *out == "" {
		fail(fmt.Errorf("-out is required"))
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		fail(err)
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		fail(err)
	}
	headVersion, err := pseudoVersion(root, head)
	if err != nil {
		fail(err)
	}
	wanted := map[string]map[string]string{} // module path → version → revision
	add := func(path, version, rev string) {
		if wanted[path] == nil {
			wanted[path] = map[string]string{}
		}
		wanted[path][version] = rev
	}
	for _, dir := range modules {
		data, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			fail(err)
		}
		f, err := modfile.ParseLax(filepath.Join(dir, "go.mod"), data, nil)
		if err != nil {
			fail(err)
		}
		add(f.Module.Mod.Path, headVersion, head)
		for _, r := range f.Require {
			if r.Mod.Path != core && !strings.HasPrefix(r.Mod.Path, core+"/") {
				continue
			}
			if !module.IsPseudoVersion(r.Mod.Version) {
				fail(fmt.Errorf("%s/go.mod requires %s %s: not a pseudo-version of a commit in this repo", dir, r.Mod.Path, r.Mod.Version))
			}
			rev, err := module.PseudoVersionRev(r.Mod.Version)
			if err != nil {
				fail(err)
			}
			add(r.Mod.Path, r.Mod.Version, rev)
		}
	}
	for path, versions := range wanted {
		subdir := strings.TrimPrefix(strings.TrimPrefix(path, core), "/")
		var list []string
		for version, rev := range versions {
			if err := publish(root, *out, path, subdir, version, rev); err != nil {
				fail(fmt.Errorf("%s@%s: %w", path, version, err))
			}
			list = append(list, version)
		}
		sort.Strings(list)
		dir, err := escapedDir(*out, path)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "list"), []byte(strings.Join(list, "\n")+"\n"), 0o644); err != nil {
			fail(err)
		}
	}
	fmt.Println(headVersion)
}

// publish writes path@version, made from commit rev, into the proxy directory.
func publish(root, out, path, subdir, version, rev string) error {
	dir, err := escapedDir(out, path)
	if err != nil {
		return err
	}
	full, err := git(root, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return fmt.Errorf("commit %s is not in this clone: %w", rev, err)
	}
	when, err := commitTime(root, full)
	if err != nil {
		return err
	}
	if want, _ := pseudoVersion(root, full); want != version {
		return fmt.Errorf("commit %s has pseudo-version %s", rev, want)
	}
	gomod := "go.mod"
	if subdir != "" {
		gomod = subdir + "/go.mod"
	}
	mod, err := git(root, "show", full+":"+gomod)
	if err != nil {
		return err
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when})
	if err := os.WriteFile(filepath.Join(dir, ev+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ev+".mod"), []byte(mod+"\n"), 0o644); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(dir, ev+".zip"))
	if err != nil {
		return err
	}
	defer zf.Close()
	tree, err := checkout(root, full)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	if err := zip.CreateFromDir(zf, module.Version{Path: path, Version: version}, filepath.Join(tree, subdir)); err != nil {
		return err
	}
	return zf.Close()
}

// checkout writes the files of commit rev, as git archive gives them, into a new temporary
// directory (a worktree's .git is a file, which zip.CreateFromVCS does not recognise).
func checkout(root, rev string) (string, error) {
	tree, err := os.MkdirTemp("", "modproxy-")
	if err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", rev)
	extract := exec.Command("tar", "-x", "-C", tree)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	extract.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, extract.Stderr = &stderr, &stderr
	if err := extract.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		_ = extract.Wait()
		os.RemoveAll(tree)
		return "", fmt.Errorf("git archive %s: %w: %s", rev, err, stderr.String())
	}
	if err := extract.Wait(); err != nil {
		os.RemoveAll(tree)
		return "", fmt.Errorf("tar -x: %w: %s", err, stderr.String())
	}
	return tree, nil
}

func escapedDir(out, path string) (string, error) {
	ep, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(out, filepath.FromSlash(ep), "@v")
	return dir, os.MkdirAll(dir, 0o755)
}

func pseudoVersion(root, rev string) (string, error) {
	when, err := commitTime(root, rev)
	if err != nil {
		return "", err
	}
	return module.PseudoVersion("", "", when, rev[:12]), nil
}

func commitTime(root, rev string) (time.Time, error) {
	s, err := git(root, "log", "-1", "--format=%ct", rev)
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time of %s: %w", rev, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modproxy:", err)
	os.Exit(1)
}
