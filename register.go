package exq

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/exqgo/exq/internal/registry"
)

// Register adds the worker for class while the node runs (for a worker known at start, use
// Options.Register; for an args type with Class(), AddWorker); ErrAlreadyRegistered if the class
// has one (from Options.Workers, Options.Register or an earlier call). Workers given to Start
// (Options.Register, Options.Workers) are there before the first fetch; one registered here
// within Options.RegisterGrace of Start, or before RegistrationDone, still gets the jobs
// that were fetched before it: they go back to their queue rather than fail.
func (e *Exq) Register(class string, w Worker) error {
	if class == "" {
		return errors.New("exq: register: class is empty")
	}
	if w == nil {
		return fmt.Errorf("exq: register %q: worker is nil", class)
	}
	if !e.registry.Add(class, w) {
		return fmt.Errorf("exq: register: %w: %q", ErrAlreadyRegistered, class)
	}
	return nil
}

// RegistrationDone tells the node that every worker is registered: from now on a job whose
// class has no worker fails at once with exq.UnknownClass (retried or dead like any failure)
// instead of going back to its queue for the rest of Options.RegisterGrace. A program that
// registers workers after Start calls it when it is done; one that gives them all to Start
// may call it at once, or set RegisterGrace to NoRegisterGrace.
func (e *Exq) RegistrationDone() { e.registry.Done() }

// newRegistry builds the registry of a node from its validated Options: Workers, then
// Register (withDefaults has refused duplicates already).
func newRegistry(ws map[string]Worker, regs []Registration, grace time.Duration) *registry.Registry[Worker] {
	workers := make(map[string]Worker, len(ws)+len(regs))
	maps.Copy(workers, ws)
	for _, reg := range regs {
		workers[reg.Class] = reg.Worker
	}
	return registry.New(workers, grace)
}
