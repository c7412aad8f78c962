package exq

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/wire"
)

// Default lifetimes of a workflow's data (WorkflowOptions.TTL and Expiry).
const (
	// DefaultWorkflowTTL is how long a workflow's data stays once every job of it has ended.
	DefaultWorkflowTTL = 24 * time.Hour
	// DefaultWorkflowExpiry is how long a workflow's data stays, from its creation, while some
	// job of it has not ended.
	DefaultWorkflowExpiry = 30 * 24 * time.Hour
)

// ParentDeathPolicy says what a job of a workflow does when a job it depends on dies (or is
// canceled).
type ParentDeathPolicy int

const (
	// CancelOnParentDeath cancels the job, and its own dependents in turn (as their policies
	// say); the workflow shows it canceled with the reason. The default.
	CancelOnParentDeath ParentDeathPolicy = iota
	// RunOnParentDeath runs the job anyway once every parent has ended, succeeded or not.
	RunOnParentDeath
)

// WorkflowJob is one job of a workflow: an ordinary job with a name unique in the workflow and
// the names of the jobs it waits for. Typed, it names no class: Args is a value of a JobArgs
// type, as in a JobSpec,
//
//	exq.WorkflowJob{Name: "resize", Args: Resize{Path: "p.png"}, DependsOn: []string{"fetch"}}
type WorkflowJob struct {
	// Name names the job in the workflow: not empty, at most 200 bytes, no control characters.
	Name string
	// Queue, Class, Args and Options are as in a JobSpec: Args a JobArgs value (its Class and
	// Queue method fill in Class and an empty Queue) or a list; Queue "default" when empty and
	// not given by Args. Unique is refused.
	Queue, Class string
	Args         any
	Options      []EnqueueOption
	// DependsOn names the jobs that must succeed before this one is pushed to its queue.
	DependsOn []string
	// OnParentDeath says what happens when one of them dies instead.
	OnParentDeath ParentDeathPolicy
}

// WorkflowOptions describe a workflow.
type WorkflowOptions struct {
	// ID names the workflow; empty means a new random id. An id in use is refused
	// (ErrWorkflowExists). An id is at most 200 bytes of UTF-8 without spaces, control
	// characters, ':', '{', '}', '*', '?', '[', ']' or '\' (ErrInvalidWorkflow otherwise).
	ID string
	// Description is shown by the dashboard and the exq command.
	Description string
	// TTL is how long the data stays once every job has ended; zero means DefaultWorkflowTTL.
	TTL time.Duration
	// Expiry is how long the data stays from creation while some job has not ended; zero
	// means DefaultWorkflowExpiry.
	Expiry time.Duration
}

// Workflow is a written workflow: its id and its jobs' jids by name.
type Workflow struct {
	ID   string
	JIDs map[string]string
}

// Chain makes jobs a chain: each depends on the one before it (a → b → c), in addition to any
// DependsOn it has. It changes jobs in place and returns them.
func Chain(jobs ...WorkflowJob) []WorkflowJob {
	for i := 1; i < len(jobs); i++ {
		jobs[i].DependsOn = append(jobs[i].DependsOn, jobs[i-1].Name)
	}
	return jobs
}

// EnqueueWorkflow writes a workflow in one atomic step: the jobs that depend on nothing go to
// their queues at once, and each other job is pushed to its queue, exactly once, when all its
// parents have succeeded. A cycle, an unknown or repeated name, a scheduled or a unique job is
// refused with an error naming it (ErrInvalidWorkflow) before anything is written. The jobs may
// run on any queues and nodes, which must be exq nodes (docs/workflows.md).
func (e *Exq) EnqueueWorkflow(ctx context.Context, o WorkflowOptions, jobs []WorkflowJob) (Workflow, error) {
	return e.enq.enqueueWorkflow(ctx, o, jobs)
}

// EnqueueWorkflow writes a workflow; see Exq.EnqueueWorkflow.
func (c *Client) EnqueueWorkflow(ctx context.Context, o WorkflowOptions, jobs []WorkflowJob) (Workflow, error) {
	return c.enq.enqueueWorkflow(ctx, o, jobs)
}

// WorkflowID is the id of the workflow the job belongs to and its name there ("" for none).
func (j *Job) WorkflowID() (id, name string) { return j.wf, j.wfJob }

func (en *enqueuer) enqueueWorkflow(ctx context.Context, o WorkflowOptions, jobs []WorkflowJob) (Workflow, error) {
	specs := make([]JobSpec, len(jobs))
	names := make([]string, len(jobs))
	fj := make([]flows.Job, len(jobs))
	for i, j := range jobs {
		var cfg enqueueConfig // a JID option given with the job is kept
		for _, o := range j.Options {
			if o != nil && o.apply(&cfg) != nil {
				cfg.jid = ""
				break // the build reports the bad option
			}
		}
		jid := cmp.Or(cfg.jid, wire.NewJID())
		specs[i] = JobSpec{Queue: j.Queue, Class: j.Class, Args: j.Args, Options: append(slices.Clip(j.Options), JID(jid))}
		names[i] = j.Name
		fj[i] = flows.Job{Name: j.Name, DependsOn: j.DependsOn, RunOnParentDeath: j.OnParentDeath == RunOnParentDeath, JID: jid}
	}
	for i, s := range en.flowSpecs("enqueue workflow", specs, names) {
		fj[i].Spec = s
	}
	id, jids, err := flows.EnqueueWorkflow(ctx, en.flowEnv(), flows.Workflow{ID: o.ID, Description: o.Description, TTL: o.TTL, Expiry: o.Expiry}, fj)
	if id == "" {
		return Workflow{}, err
	}
	return Workflow{ID: id, JIDs: jids}, err
}

// WorkflowStatus is what is known of one workflow.
type WorkflowStatus struct {
	ID, Description string
	// Total is the number of jobs; Succeeded, Dead and Canceled count those that ended so.
	Total, Succeeded, Dead, Canceled int
	// CreatedAt is when it was written; FinishedAt when its last job ended (zero until then).
	CreatedAt, FinishedAt time.Time
	// Jobs are its jobs, by name.
	Jobs []WorkflowJobStatus
}

// WorkflowJobStatus is one job of a workflow.
type WorkflowJobStatus struct {
	Name, JID, Queue string
	// State is "waiting" (for parents), "queued" (pushed to its queue: waiting there, running
	// or retrying), "succeeded", "dead" or "canceled".
	State string
	// DependsOn are its parents' names; Waiting how many of them have not ended.
	DependsOn []string
	Waiting   int
	// RunOnParentDeath is its policy; Reason, for a canceled job, says which parent ended how
	// ("extract dead"), and for a queued one that a Sidekiq or Exq node was seen running, which.
	RunOnParentDeath bool
	Reason           string
}

// Workflow reads one workflow; ErrWorkflowNotFound when there is none with the id.
func (a *API) Workflow(ctx context.Context, id string) (WorkflowStatus, error) {
	if err := flows.CheckID(id); err != nil {
		// No workflow has such an id (EnqueueWorkflow refuses it); its keys would be another
		// workflow's ("w1:graph" read w1's graph as a workflow).
		return WorkflowStatus{}, fmt.Errorf("exq: api: workflow %q: not a workflow id: %v: %w", id, err, ErrWorkflowNotFound)
	}
	st, err := flows.ReadWorkflow(ctx, a.jq, id)
	return workflowStatus(st), err
}

func workflowStatus(st flows.WorkflowStatus) WorkflowStatus {
	out := WorkflowStatus{ID: st.ID, Description: st.Description, Total: st.Total, Succeeded: st.Succeeded,
		Dead: st.Dead, Canceled: st.Canceled, CreatedAt: st.CreatedAt, FinishedAt: st.FinishedAt}
	for _, j := range st.Jobs {
		out.Jobs = append(out.Jobs, WorkflowJobStatus(j))
	}
	return out
}

// Workflows lists the workflows whose data is still kept, newest first, without their jobs
// (Workflow reads one with them).
func (a *API) Workflows(ctx context.Context, o ListOptions) ([]WorkflowStatus, error) {
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	list, err := flows.ListWorkflows(ctx, a.jq, start, stop-start+1)
	out := make([]WorkflowStatus, 0, len(list))
	for _, st := range list {
		if flows.CheckID(st.ID) == nil { // a listed id no workflow can have names another's key
			out = append(out, workflowStatus(st))
		}
	}
	return out, err
}
