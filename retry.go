package exq

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"
)

// ExqBackoff is the default retry delay, Exq's (and classic Sidekiq's) formula:
// retryCount⁴ + 15 + rand(0..30)·(retryCount+1) seconds, retryCount being 1 for the first
// retry. 25 retries span about 25 days.
func ExqBackoff(retryCount int, _ *Job) time.Duration {
	n := float64(retryCount)
	sec := math.Pow(n, 4) + 15 + float64(rand.IntN(31))*(n+1)
	return time.Duration(sec * float64(time.Second))
}

// PanicError is the failure of a job whose worker panicked. Its error_class is "panic" and its
// error_message the panic value.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack where the panic happened.
	Stack []byte
}

// Error returns the panic value as text; it becomes the job's error_message.
func (p *PanicError) Error() string { return fmt.Sprint(p.Value) }

// ErrorClass reports "panic" as the job's error_class.
func (p *PanicError) ErrorClass() string { return "panic" }

// unknownClassError is the failure of a job whose class has no worker.
type unknownClassError struct{ class string }

func (u *unknownClassError) Error() string {
	return fmt.Sprintf("%s %q", ErrUnknownClass.Error(), u.class)
}
func (u *unknownClassError) Is(target error) bool { return target == ErrUnknownClass }
func (u *unknownClassError) ErrorClass() string   { return "exq.UnknownClass" }

// maxErrorMessage bounds error_message (WIRE.md §2).
const maxErrorMessage = 10000

// errorMessage is err's message cut to the wire limit, on a rune boundary.
func errorMessage(err error) string {
	msg := err.Error()
	if len(msg) <= maxErrorMessage {
		return msg
	}
	msg = msg[:maxErrorMessage]
	for !utf8.ValidString(msg) {
		msg = msg[:len(msg)-1]
	}
	return msg
}

// errorClass is the short name of a failure for error_class: what the error reports through an
// ErrorClass() string method, else the Go type of the first error in its chain that is not a
// plain fmt.Errorf wrapper (so fmt.Errorf("send: %w", opErr) reports "*net.OpError").
func errorClass(err error) string {
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	for {
		t := fmt.Sprintf("%T", err)
		if !strings.HasPrefix(t, "*fmt.wrapError") {
			return t
		}
		next := errors.Unwrap(err)
		if next == nil {
			return t
		}
		err = next
	}
}
