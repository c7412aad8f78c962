// Package signup is a small application package whose code enqueues exq jobs, and its test
// (signup_test.go) shows how to test such code with package exqtest, without Redis: a Fake
// records what was enqueued, exactly as a node would write it, and an Inline runs each job's
// worker at once, in the test's goroutine.
//
//	go test ./examples/testing
//
// The code under test takes an exq.Enqueuer, which *exq.Exq, *exq.Client and both doubles
// implement; in production it gets the node (or a client).
package signup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/exqgo/exq"
)

// WelcomeEmail is the args of Mail.Welcome jobs.
type WelcomeEmail struct {
	UserID int    `json:"user_id"`
	Email  string `json:"email"`
}

// Class names the job's class.
func (WelcomeEmail) Class() string { return "Mail.Welcome" }

// Queue sends welcome emails to the "mail" queue.
func (WelcomeEmail) Queue() string { return "mail" }

// ErrBadEmail is returned by SignUp for an address without an @.
var ErrBadEmail = errors.New("signup: not an email address")

// Service signs users up. Jobs is where it enqueues their welcome emails.
type Service struct {
	Jobs exq.Enqueuer

	mu    sync.Mutex
	users []string // by user id - 1
}

// SignUp creates a user and enqueues the welcome email; it returns the user's id.
func (s *Service) SignUp(ctx context.Context, email string) (int, error) {
	if !strings.Contains(email, "@") {
		return 0, fmt.Errorf("%w: %q", ErrBadEmail, email)
	}
	s.mu.Lock()
	s.users = append(s.users, email)
	id := len(s.users)
	s.mu.Unlock()
	if _, err := exq.EnqueueArgs(ctx, s.Jobs, WelcomeEmail{UserID: id, Email: email}); err != nil {
		return 0, fmt.Errorf("signup: welcome email for user %d: %w", id, err)
	}
	return id, nil
}

// Resend enqueues the welcome email again, at most one pending per user: a second Resend
// before the first email went out returns an error matching exq.ErrUniqueConflict.
func (s *Service) Resend(ctx context.Context, id int, email string) (string, error) {
	return exq.EnqueueArgs(ctx, s.Jobs, WelcomeEmail{UserID: id, Email: email},
		exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour}))
}

// Mailer is the worker of Mail.Welcome jobs. Send delivers one email.
type Mailer struct {
	Send func(ctx context.Context, to, subject string) error
}

// Welcome sends a WelcomeEmail. Register it with exq.AddWorker(node, mailer.Welcome), or give
// it to Start as Options.Workers[WelcomeEmail{}.Class()] = exq.Typed(mailer.Welcome).
func (m *Mailer) Welcome(ctx context.Context, job *exq.Job, a WelcomeEmail) error {
	return m.Send(ctx, a.Email, fmt.Sprintf("Welcome, user %d!", a.UserID))
}
