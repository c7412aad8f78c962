package signup

import (
	"context"
	"errors"
	"testing"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqtest"
)

// A Fake records the job as a node would write it, on the queue WelcomeEmail names.
func TestSignUpEnqueuesAWelcomeEmail(t *testing.T) {
	t.Parallel()
	fake := exqtest.NewFake()
	svc := &Service{Jobs: fake}

	id, err := svc.SignUp(context.Background(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}

	jobs := fake.JobsOfClass(WelcomeEmail{}.Class())
	if len(jobs) != 1 {
		t.Fatalf("enqueued %d welcome emails, want 1", len(jobs))
	}
	if jobs[0].Queue != "mail" {
		t.Errorf("queue %q, want mail", jobs[0].Queue)
	}
	var got WelcomeEmail
	if err := jobs[0].Bind(&got); err != nil {
		t.Fatal(err)
	}
	if want := (WelcomeEmail{UserID: id, Email: "ada@example.com"}); got != want {
		t.Errorf("args %+v, want %+v", got, want)
	}
}

func TestSignUpWithABadAddressEnqueuesNothing(t *testing.T) {
	t.Parallel()
	fake := exqtest.NewFake()
	svc := &Service{Jobs: fake}

	if _, err := svc.SignUp(context.Background(), "not-an-address"); !errors.Is(err, ErrBadEmail) {
		t.Fatalf("err %v, want ErrBadEmail", err)
	}
	if jobs := fake.Jobs(); len(jobs) != 0 {
		t.Fatalf("enqueued %d jobs, want none", len(jobs))
	}
}

// The Fake holds unique locks as Redis does, until the test says the job ran (Complete).
func TestResendAllowsOnePendingEmailPerUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := exqtest.NewFake()
	svc := &Service{Jobs: fake}

	first, err := svc.Resend(ctx, 1, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Resend(ctx, 1, "ada@example.com")
	var conflict *exq.UniqueConflictError
	if !errors.As(err, &conflict) || conflict.JID != first {
		t.Fatalf("second Resend: err %v, want a conflict with %s", err, first)
	}
	if _, err := svc.Resend(ctx, 2, "grace@example.com"); err != nil {
		t.Fatalf("another user's Resend: %v", err)
	}

	fake.Complete(first) // the email went out: the node released the lock
	if _, err := svc.Resend(ctx, 1, "ada@example.com"); err != nil {
		t.Fatalf("Resend after the first one ran: %v", err)
	}
}

// An Inline runs the worker inside the enqueue, with the args gone through JSON as they would
// through Redis, and returns its error to the caller.
func TestSignUpSendsTheWelcomeEmailInline(t *testing.T) {
	t.Parallel()
	var sent []string
	mailer := &Mailer{Send: func(_ context.Context, to, subject string) error {
		sent = append(sent, to+": "+subject)
		return nil
	}}
	inline := exqtest.NewInline(nil)
	if err := exq.AddWorker(inline, mailer.Welcome); err != nil {
		t.Fatal(err)
	}
	svc := &Service{Jobs: inline}

	if _, err := svc.SignUp(context.Background(), "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0] != "ada@example.com: Welcome, user 1!" {
		t.Fatalf("sent %q, want one welcome email to ada@example.com", sent)
	}
}

// A worker's failure comes back from an Inline enqueue (a node would retry the job instead),
// so a test sees it at once.
func TestInlineEnqueueReturnsTheWorkersFailure(t *testing.T) {
	t.Parallel()
	down := errors.New("smtp: connection refused")
	inline := exqtest.NewInline(map[string]exq.Worker{
		WelcomeEmail{}.Class(): exq.Typed((&Mailer{Send: func(context.Context, string, string) error { return down }}).Welcome),
	})
	svc := &Service{Jobs: inline}

	if _, err := svc.SignUp(context.Background(), "ada@example.com"); !errors.Is(err, down) {
		t.Fatalf("err %v, want the worker's error", err)
	}
}
