package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// errDeclined ends a destructive command the operator did not confirm: exit 1, nothing done.
var errDeclined = errors.New("not confirmed; nothing was deleted")

// confirm asks before a destructive step. On a terminal it asks the question on stderr and
// reads y or yes; elsewhere only --force confirms (exit 2 without it, before Redis is touched),
// as asynq's "queue remove" does, so a script never deletes by accident.
func (a *app) mustForce(force bool, what string) error {
	if force || a.stdinTTY {
		return nil
	}
	return usagef("%s: pass --force to confirm (stdin is not a terminal, so exq cannot ask)", what)
}

func (a *app) confirm(force bool, question string) error {
	if force {
		return nil
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errDeclined
}
