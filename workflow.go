package exq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

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
// the names of the jobs it waits for.
type WorkflowJob struct {
	// Name names the job in the workflow: not empty, at most 200 bytes, no control characters.
	Name string
	// Queue, Class, Args and Options are as for Enqueue (Unique is refused).
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
	// (ErrWorkflowExists).
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

func badWorkflow(op, format string, a ...any) error {
	return fmt.Errorf("exq: %s: %s: %w", op, fmt.Sprintf(format, a...), ErrInvalidWorkflow)
}

// checkWorkflowName refuses names that the stored graph could not hold unambiguously.
func checkWorkflowName(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if len(name) > 200 {
		return fmt.Errorf("name %.40q… is longer than 200 bytes", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("name %q holds a control character", name)
		}
	}
	return nil
}

// workflowOrder checks the graph and returns the jobs' indexes parents first: an unknown or
// repeated name, a job depending on itself or a cycle is an error naming the jobs.
func workflowOrder(op string, jobs []WorkflowJob) ([]int, map[string]int, error) {
	index := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if err := checkWorkflowName(j.Name); err != nil {
			return nil, nil, badWorkflow(op, "job %d: %v", i, err)
		}
		if _, dup := index[j.Name]; dup {
			return nil, nil, badWorkflow(op, "job name %q is used twice", j.Name)
		}
		index[j.Name] = i
	}
	waiting := make([]int, len(jobs))
	children := make([][]int, len(jobs))
	for i, j := range jobs {
		seen := map[string]bool{}
		for _, p := range j.DependsOn {
			pi, ok := index[p]
			switch {
			case !ok:
				return nil, nil, badWorkflow(op, "job %q depends on %q, which is not a job of the workflow", j.Name, p)
			case pi == i:
				return nil, nil, badWorkflow(op, "job %q depends on itself", j.Name)
			case seen[p]:
				return nil, nil, badWorkflow(op, "job %q names %q twice in DependsOn", j.Name, p)
			}
			seen[p] = true
			waiting[i]++
			children[pi] = append(children[pi], i)
		}
	}
	order := make([]int, 0, len(jobs))
	for i := range jobs {
		if waiting[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, c := range children[order[k]] {
			if waiting[c]--; waiting[c] == 0 {
				order = append(order, c)
			}
		}
	}
	if len(order) < len(jobs) {
		return nil, nil, badWorkflow(op, "cycle: %s", describeCycle(jobs, index, waiting))
	}
	return order, index, nil
}

// describeCycle finds one cycle among the jobs left waiting and names it "a → b → a".
func describeCycle(jobs []WorkflowJob, index map[string]int, waiting []int) string {
	start := -1
	for i := range jobs {
		if waiting[i] > 0 {
			start = i
			break
		}
	}
	// Walk parents that are still waiting: every step has one, so the walk must repeat.
	pos := map[int]int{}
	var path []int
	for at := start; ; {
		if p, ok := pos[at]; ok {
			// path walks from child to parent: read backwards, it is the order the jobs
			// would run in, started at the job given first.
			cyc := slices.Clone(path[p:])
			slices.Reverse(cyc)
			first := slices.Index(cyc, slices.Min(cyc))
			cyc = append(cyc[first:], cyc[:first]...)
			names := make([]string, 0, len(cyc)+1)
			for _, k := range append(cyc, cyc[0]) {
				names = append(names, strconv.Quote(jobs[k].Name))
			}
			return strings.Join(names, " → ")
		}
		pos[at] = len(path)
		path = append(path, at)
		for _, p := range jobs[at].DependsOn {
			if waiting[index[p]] > 0 {
				at = index[p]
				break
			}
		}
	}
}

func (en *enqueuer) enqueueWorkflow(ctx context.Context, o WorkflowOptions, jobs []WorkflowJob) (Workflow, error) {
	const op = "enqueue workflow"
	if len(jobs) == 0 {
		return Workflow{}, badWorkflow(op, "no jobs")
	}
	if o.TTL < 0 || o.Expiry < 0 {
		return Workflow{}, badWorkflow(op, "TTL and Expiry must not be negative")
	}
	id := o.ID
	if id == "" {
		id = wire.NewJID()
	} else if err := checkFlowID(id); err != nil {
		return Workflow{}, badWorkflow(op, "ID: %v", err)
	}
	_, index, err := workflowOrder(op, jobs)
	if err != nil {
		return Workflow{}, err
	}
	now, err := en.serverNow(ctx, op)
	if err != nil {
		return Workflow{}, err
	}
	// The jids are chosen first, so that each job's document can name its parents' jids.
	jids := make([]string, len(jobs))
	for i, j := range jobs {
		var cfg enqueueConfig // a JID option given with the job is kept
		for _, o := range j.Options {
			if o != nil && o.apply(&cfg) != nil {
				cfg.jid = ""
				break // the build below reports the bad option
			}
		}
		jids[i] = cmp.Or(cfg.jid, wire.NewJID())
	}
	specs := make([]JobSpec, len(jobs))
	for i, j := range jobs {
		opts := append(append(make([]EnqueueOption, 0, len(j.Options)+1), j.Options...), JID(jids[i]))
		specs[i] = JobSpec{Queue: j.Queue, Class: j.Class, Args: j.Args, Options: opts}
	}
	built, err := en.buildFlowJobs(ctx, now, op, specs, func(i int) *wire.NewJob {
		f := &wire.NewJob{Workflow: id, WorkflowJob: jobs[i].Name}
		for _, p := range jobs[i].DependsOn {
			f.WorkflowParents = append(f.WorkflowParents, [2]string{p, jids[index[p]]})
		}
		return f
	}, badWorkflow)
	if err != nil {
		var bad *invalidJobError
		if errors.As(err, &bad) {
			return Workflow{}, fmt.Errorf("%w (workflow job %q)", err, jobs[indexOfJob(err, len(jobs))].Name)
		}
		return Workflow{}, err
	}
	children := make([][]string, len(jobs))
	for _, j := range jobs {
		for _, p := range j.DependsOn {
			children[index[p]] = append(children[index[p]], j.Name)
		}
	}
	graph := make([][2]string, 0, 6*len(jobs))
	var waiting [][2]string
	var roots []flowJob
	var queues []string
	for i, j := range jobs {
		n := j.Name
		graph = append(graph, [2]string{"q:" + n, j.Queue}, [2]string{"j:" + n, jids[i]})
		if len(children[i]) > 0 {
			graph = append(graph, [2]string{"c:" + n, strings.Join(children[i], "\n")})
		}
		if j.OnParentDeath == RunOnParentDeath {
			graph = append(graph, [2]string{"r:" + n, "1"})
		}
		if len(j.DependsOn) == 0 {
			graph = append(graph, [2]string{"s:" + n, "queued"})
			roots = append(roots, built[i])
			continue
		}
		graph = append(graph, [2]string{"s:" + n, "waiting"}, [2]string{"w:" + n, strconv.Itoa(len(j.DependsOn))},
			[2]string{"p:" + n, strings.Join(j.DependsOn, "\n")})
		waiting = append(waiting, [2]string{n, built[i].doc})
		if !contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
	}
	sort.Strings(queues)
	meta := [][2]string{
		{"description", o.Description},
		{"total", strconv.Itoa(len(jobs))},
		{"ttl", strconv.FormatInt(max(int64(cmpDur(o.TTL, DefaultWorkflowTTL)/time.Second), 1), 10)},
		{"queues", strings.Join(queues, "\n")},
	}
	token := wire.NewJID()
	status, err := en.jq.workflowCreate(ctx, id, token, now, cmpDur(o.Expiry, DefaultWorkflowExpiry), meta, graph, waiting, roots)
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		err = fmt.Errorf("exq: %s (%d jobs): %w", op, len(jobs), err)
	case status == batchExists:
		err = fmt.Errorf("exq: %s %s: %w", op, id, ErrWorkflowExists)
	case err != nil:
		err = fmt.Errorf("exq: %s %s: written on the master: %w", op, id, err)
	}
	finishFlow(built, err)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return Workflow{}, err
	}
	for _, r := range roots {
		en.enqueued(r.queue, r.class, r.jid, time.Time{})
	}
	w := Workflow{ID: id, JIDs: make(map[string]string, len(jobs))}
	for i, j := range jobs {
		w.JIDs[j.Name] = jids[i]
	}
	return w, err
}

// indexOfJob reads the job number inBatch put in a refusal's message ("job 3"), for naming
// the workflow job; 0 when there is none.
func indexOfJob(err error, n int) int {
	var bad *invalidJobError
	if !errors.As(err, &bad) {
		return 0
	}
	_, after, ok := strings.Cut(bad.op, ": job ")
	if !ok {
		return 0
	}
	i, err2 := strconv.Atoi(after)
	if err2 != nil || i < 0 || i >= n {
		return 0
	}
	return i
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
	// ("extract dead").
	RunOnParentDeath bool
	Reason           string
}

// Workflow reads one workflow; ErrWorkflowNotFound when there is none with the id.
func (a *API) Workflow(ctx context.Context, id string) (WorkflowStatus, error) {
	meta, graph, err := a.jq.workflowRead(ctx, id)
	if err != nil {
		return WorkflowStatus{}, fmt.Errorf("exq: api: workflow %s: %w", id, err)
	}
	if len(meta) == 0 {
		return WorkflowStatus{}, fmt.Errorf("exq: api: workflow %s: %w", id, ErrWorkflowNotFound)
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	st := workflowStatusOf(id, meta)
	for f, jid := range graph {
		name, ok := strings.CutPrefix(f, "j:")
		if !ok {
			continue
		}
		j := WorkflowJobStatus{Name: name, JID: jid, Queue: graph["q:"+name], State: graph["s:"+name],
			Waiting: atoi(graph["w:"+name]), RunOnParentDeath: graph["r:"+name] != "", Reason: graph["why:"+name]}
		if p := graph["p:"+name]; p != "" {
			j.DependsOn = strings.Split(p, "\n")
		}
		st.Jobs = append(st.Jobs, j)
	}
	sort.Slice(st.Jobs, func(i, k int) bool { return st.Jobs[i].Name < st.Jobs[k].Name })
	return st, nil
}

func workflowStatusOf(id string, meta map[string]string) WorkflowStatus {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	return WorkflowStatus{ID: id, Description: meta["description"], Total: atoi(meta["total"]),
		Succeeded: atoi(meta["succeeded"]), Dead: atoi(meta["dead"]), Canceled: atoi(meta["canceled"]),
		CreatedAt: secondsField(meta, "created_at"), FinishedAt: secondsField(meta, "finished_at")}
}

// Workflows lists the workflows whose data is still kept, newest first, without their jobs
// (Workflow reads one with them).
func (a *API) Workflows(ctx context.Context, o ListOptions) ([]WorkflowStatus, error) {
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	ids, err := a.jq.workflowIDs(ctx, start, stop-start+1)
	if err != nil {
		return nil, fmt.Errorf("exq: api: workflows: %w", err)
	}
	out := make([]WorkflowStatus, 0, len(ids))
	var gone []string
	for _, id := range ids {
		meta, err := a.jq.workflowMeta(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("exq: api: workflows: %w", err)
		}
		if len(meta) == 0 {
			gone = append(gone, id)
			continue
		}
		out = append(out, workflowStatusOf(id, meta))
	}
	if err := a.jq.forgetWorkflows(ctx, gone...); err != nil {
		a.log.Warn("exq: api: could not trim expired workflows from the listing", "error", err)
	}
	return out, nil
}
