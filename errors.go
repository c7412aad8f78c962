package exq

import "errors"

// Sentinel errors. Errors returned by exq wrap them, so test with errors.Is.
var (
	// ErrInvalidOptions is wrapped by Start when an Options field is out of range; the message
	// names the field.
	ErrInvalidOptions = errors.New("exq: invalid options")
	// ErrInvalidJob is wrapped by the Enqueue calls when the queue, class, args or an option is
	// not acceptable. Nothing is written to Redis.
	ErrInvalidJob = errors.New("exq: invalid job")
	// ErrUnknownClass is the failure of a job whose class has no registered worker. The job is
	// retried or dead-lettered like any failure, so deploying the worker later still runs it.
	ErrUnknownClass = errors.New("exq: no worker registered for class")
	// ErrStopped is returned by calls made on a node after Stop.
	ErrStopped = errors.New("exq: stopped")
	// ErrUniqueConflict is matched by the error of an enqueue whose unique lock is held by
	// another job (a *UniqueConflictError, carrying the holder's jid).
	ErrUniqueConflict = errors.New("exq: unique conflict")
	// ErrRedisUnavailable is wrapped by Start when Redis does not answer its PING.
	ErrRedisUnavailable = errors.New("exq: Redis unavailable")
)
