package exq

import (
	"context"
	"errors"
	"fmt"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store"
)

// flowShard is the enqueuer of the shard of a batch or workflow, and its id: under sharding a
// batch or workflow lives on one shard with all its jobs and callbacks (flows.Shard).
func (s *sharder) flowShard(ctx context.Context, id, parent string) (*enqueuer, string, error) {
	stores := make([]*store.Store, len(s.ens))
	for i, en := range s.ens {
		stores[i] = en.jq
	}
	i, id, err := flows.Shard(ctx, stores, id, parent)
	if err != nil {
		return nil, "", err
	}
	return s.ens[i], id, nil
}

// NewBatch creates a batch on one shard (the one its id hashes to; a child batch on its
// parent's); see Exq.NewBatch.
func (s *sharder) NewBatch(ctx context.Context, o BatchOptions, jobs []JobSpec) (string, []string, error) {
	en, id, err := s.flowShard(ctx, o.ID, o.Parent)
	if err != nil {
		return "", nil, err
	}
	o.ID = id
	return en.newBatch(ctx, o, false, jobs)
}

// EnqueueWorkflow writes a workflow on one shard (the one its id hashes to); see
// Exq.EnqueueWorkflow.
func (s *sharder) EnqueueWorkflow(ctx context.Context, o WorkflowOptions, jobs []WorkflowJob) (Workflow, error) {
	en, id, err := s.flowShard(ctx, o.ID, "")
	if err != nil {
		return Workflow{}, err
	}
	o.ID = id
	return en.enqueueWorkflow(ctx, o, jobs)
}

// Batch reads batch bid from the shard that holds it, and returns that shard's index.
func (a *ShardedAPI) Batch(ctx context.Context, bid string) (BatchStatus, int, error) {
	for i, s := range a.shards {
		st, err := s.Batch(ctx, bid)
		if !errors.Is(err, ErrBatchNotFound) {
			return st, i, err
		}
	}
	return BatchStatus{}, -1, fmt.Errorf("exq: api: batch %s: %w", bid, ErrBatchNotFound)
}

// Workflow reads workflow id from the shard that holds it, and returns that shard's index.
func (a *ShardedAPI) Workflow(ctx context.Context, id string) (WorkflowStatus, int, error) {
	for i, s := range a.shards {
		st, err := s.Workflow(ctx, id)
		if !errors.Is(err, ErrWorkflowNotFound) {
			return st, i, err
		}
	}
	return WorkflowStatus{}, -1, fmt.Errorf("exq: api: workflow %s: %w", id, ErrWorkflowNotFound)
}
