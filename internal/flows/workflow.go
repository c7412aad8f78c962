package flows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Workflow is a workflow to write (the root's WorkflowOptions, checked here).
type Workflow struct {
	ID, Description string
	TTL, Expiry     time.Duration
}

// Job is one job of a workflow: its name, parents and policy, its jid (chosen before any
// document is built, so that each document names its parents' jids) and its spec.
type Job struct {
	Name             string
	DependsOn        []string
	RunOnParentDeath bool
	JID              string
	Spec             Spec
}

// CheckName refuses names that the stored graph could not hold unambiguously.
func CheckName(name string) error {
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

// Order checks the graph and returns the jobs' indexes parents first, and each name's index:
// an unknown or repeated name, a job depending on itself or a cycle is an error naming the
// jobs (ErrInvalidWorkflow).
func Order(op string, jobs []Job) ([]int, map[string]int, error) {
	index := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if err := CheckName(j.Name); err != nil {
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
func describeCycle(jobs []Job, index map[string]int, waiting []int) string {
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

// EnqueueWorkflow writes workflow w in one atomic step and returns its id and the jids by
// name: the jobs that depend on nothing go to their queues now, the others wait in the
// workflow's graph until workflow_settle.lua pushes them.
func EnqueueWorkflow(ctx context.Context, env Env, w Workflow, jobs []Job) (string, map[string]string, error) {
	const op = "enqueue workflow"
	if len(jobs) == 0 {
		return "", nil, badWorkflow(op, "no jobs")
	}
	if w.TTL < 0 || w.Expiry < 0 {
		return "", nil, badWorkflow(op, "TTL and Expiry must not be negative")
	}
	id := w.ID
	if id == "" {
		id = wire.NewJID()
	} else if err := CheckID(id); err != nil {
		return "", nil, badWorkflow(op, "ID: %v", err)
	}
	_, index, err := Order(op, jobs)
	if err != nil {
		return "", nil, err
	}
	byJID := make(map[string]string, len(jobs))
	for _, j := range jobs {
		if other, dup := byJID[j.JID]; dup {
			return "", nil, badWorkflow(op, "jobs %q and %q have the same jid %q", other, j.Name, j.JID)
		}
		byJID[j.JID] = j.Name
	}
	now, err := env.Now(ctx, op)
	if err != nil {
		return "", nil, err
	}
	specs := make([]Spec, len(jobs))
	for i, j := range jobs {
		specs[i] = j.Spec
	}
	built, err := build(ctx, now, op, specs, func(i int) *wire.NewJob {
		f := &wire.NewJob{Workflow: id, WorkflowJob: jobs[i].Name}
		for _, p := range jobs[i].DependsOn {
			f.WorkflowParents = append(f.WorkflowParents, [2]string{p, jobs[index[p]].JID})
		}
		return f
	}, badWorkflow)
	if err != nil {
		return "", nil, err
	}
	meta, graph, waiting, roots := workflowDoc(w, jobs, index, built)
	status, err := env.Store.WorkflowCreate(ctx, id, wire.NewJID(), now, orDefault(w.Expiry, WorkflowExpiry), meta, graph, waiting, roots)
	switch {
	case failed(err):
		err = fmt.Errorf("exq: %s (%d jobs): %w", op, len(jobs), err)
	case status == store.BatchExistsReply:
		err = fmt.Errorf("exq: %s %s: %w", op, id, ErrWorkflowExists)
	case err != nil:
		err = fmt.Errorf("exq: %s %s: written on the master: %w", op, id, err)
	}
	finish(built, err)
	if failed(err) {
		return "", nil, err
	}
	enqueued(env, roots)
	jids := make(map[string]string, len(jobs))
	for _, j := range jobs {
		jids[j.Name] = j.JID
	}
	return id, jids, err
}

// workflowDoc is what workflow_create.lua stores: the workflow's hash fields (meta), its graph
// (per job: q: queue, j: jid, c: children, r: run on a parent's death, s: state, w: parents
// waited for, p: parents), the documents of the jobs that wait, and the jobs pushed now.
func workflowDoc(w Workflow, jobs []Job, index map[string]int, built []store.FlowJob) (meta, graph, waiting [][2]string, roots []store.FlowJob) {
	children := make([][]string, len(jobs))
	for _, j := range jobs {
		for _, p := range j.DependsOn {
			children[index[p]] = append(children[index[p]], j.Name)
		}
	}
	graph = make([][2]string, 0, 6*len(jobs))
	var queues []string
	for i, j := range jobs {
		n := j.Name
		graph = append(graph, [2]string{"q:" + n, j.Spec.Queue}, [2]string{"j:" + n, j.JID})
		if len(children[i]) > 0 {
			graph = append(graph, [2]string{"c:" + n, strings.Join(children[i], "\n")})
		}
		if j.RunOnParentDeath {
			graph = append(graph, [2]string{"r:" + n, "1"})
		}
		if len(j.DependsOn) == 0 {
			graph = append(graph, [2]string{"s:" + n, "queued"})
			roots = append(roots, built[i])
			continue
		}
		graph = append(graph, [2]string{"s:" + n, "waiting"}, [2]string{"w:" + n, strconv.Itoa(len(j.DependsOn))},
			[2]string{"p:" + n, strings.Join(j.DependsOn, "\n")})
		waiting = append(waiting, [2]string{n, built[i].Doc})
		if !slices.Contains(queues, j.Spec.Queue) {
			queues = append(queues, j.Spec.Queue)
		}
	}
	sort.Strings(queues)
	meta = [][2]string{
		{"description", w.Description},
		{"total", strconv.Itoa(len(jobs))},
		{"ttl", ttlSeconds(w.TTL, WorkflowTTL)},
		{"queues", strings.Join(queues, "\n")},
	}
	return meta, graph, waiting, roots
}

// WorkflowStatus and JobStatus have the fields of the root's WorkflowStatus and
// WorkflowJobStatus (documented there), which convert them.
type (
	WorkflowStatus struct {
		ID, Description                  string
		Total, Succeeded, Dead, Canceled int
		CreatedAt, FinishedAt            time.Time
		Jobs                             []JobStatus
	}
	JobStatus struct {
		Name, JID, Queue string
		State            string
		DependsOn        []string
		Waiting          int
		RunOnParentDeath bool
		Reason           string
	}
)

// ReadWorkflow reads workflow id with its jobs, by name; ErrWorkflowNotFound when there is
// none.
func ReadWorkflow(ctx context.Context, st *store.Store, id string) (WorkflowStatus, error) {
	meta, graph, err := st.WorkflowRead(ctx, id)
	if err != nil {
		return WorkflowStatus{}, fmt.Errorf("exq: api: workflow %s: %w", id, err)
	}
	if len(meta) == 0 {
		return WorkflowStatus{}, fmt.Errorf("exq: api: workflow %s: %w", id, ErrWorkflowNotFound)
	}
	marks, err := st.ForeignMarks(ctx, id, true)
	if err != nil {
		return WorkflowStatus{}, fmt.Errorf("exq: api: workflow %s: %w", id, err)
	}
	s := workflowStatusOf(id, meta)
	for f, jid := range graph {
		name, ok := strings.CutPrefix(f, "j:")
		if !ok {
			continue
		}
		j := JobStatus{Name: name, JID: jid, Queue: graph["q:"+name], State: graph["s:"+name],
			Waiting: atoi(graph["w:"+name]), RunOnParentDeath: graph["r:"+name] != "", Reason: graph["why:"+name]}
		if p := graph["p:"+name]; p != "" {
			j.DependsOn = strings.Split(p, "\n")
		}
		if node, ok := marks[jid]; ok && j.State == "queued" {
			j.Reason = "seen running on node " + node + ", which records nothing in a workflow"
		}
		s.Jobs = append(s.Jobs, j)
	}
	sort.Slice(s.Jobs, func(i, k int) bool { return s.Jobs[i].Name < s.Jobs[k].Name })
	return s, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func workflowStatusOf(id string, meta map[string]string) WorkflowStatus {
	return WorkflowStatus{ID: id, Description: meta["description"], Total: atoi(meta["total"]),
		Succeeded: atoi(meta["succeeded"]), Dead: atoi(meta["dead"]), Canceled: atoi(meta["canceled"]),
		CreatedAt: store.SecondsField(meta, "created_at"), FinishedAt: store.SecondsField(meta, "finished_at")}
}

// ListWorkflows lists up to count workflows from offset, newest first, without their jobs. It
// only reads: the ids of expired workflows are skipped, and left for the nodes to trim
// (TrimIndexes).
func ListWorkflows(ctx context.Context, st *store.Store, offset, count int64) ([]WorkflowStatus, error) {
	ids, err := st.WorkflowIDs(ctx, offset, count)
	if err != nil {
		return nil, fmt.Errorf("exq: api: workflows: %w", err)
	}
	out := make([]WorkflowStatus, 0, len(ids))
	for _, id := range ids {
		meta, err := st.WorkflowMeta(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("exq: api: workflows: %w", err)
		}
		if len(meta) == 0 {
			continue // expired
		}
		out = append(out, workflowStatusOf(id, meta))
	}
	return out, nil
}
