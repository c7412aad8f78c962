package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// errDeclined ends a destructive command the operator did not confirm: exit 1, nothing done.
var errDeclined = errors.New("not confirmed; nothing was deleted")

// mustForce refuses a destructive command without --force when stdin is not a terminal
// (exit 2, before Redis is touched), as asynq's "queue remove" does, so that a script never
// deletes by accident.
func (a *app) mustForce(force bool, what string) error {
	if force || a.stdinTTY {
		return nil
	}
	return usagef("%s; stdin is not a terminal, so exq cannot ask: pass --force to confirm", what)
}

// confirm asks before a destructive step, on stderr, and goes on only for y or yes; --force
// skips the question.
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
