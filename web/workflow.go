package web

import (
	"net/http"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

func (h *handler) workflows(w http.ResponseWriter, r *http.Request) {
	ws, err := h.api.Workflows(r.Context(), exq.ListOptions{Size: flowsShown})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "workflows.html", "workflows", "Workflows", ws)
}

type workflowData struct {
	W     exq.WorkflowStatus
	Graph *graph // nil when the workflow is too large to draw
	// Jobs are the rows of the table: at most maxJobRows, each with its parents named once
	// and at most maxParentsListed of them. MoreJobs is how many rows are left out.
	Jobs     []workflowRow
	MoreJobs int
	// Repeats is how many parent names the stored graph repeats (each is drawn and listed
	// once).
	Repeats int
	// Results are the starts of the results the listed jobs stored (at most resultShown
	// bytes each), by jid.
	Results map[string]exq.StoredResult
}

// workflowRow is one job of the workflow's table.
type workflowRow struct {
	exq.WorkflowJobStatus
	Parents     []string // distinct, at most maxParentsListed
	MoreParents int      // distinct parents left out
}

// What the workflow page shows at most: rows of its table, parents listed per job, lines
// (dependencies) in its drawing, bytes of each job's result. The graph is read from Redis: a
// job's parent field may name one job thousands of times, or thousands of jobs.
const (
	maxJobRows       = 1000
	maxParentsListed = 50
	maxEdgesDrawn    = 2000
	maxNameShown     = 200 // bytes of a name, jid, queue or state
	resultShown      = 200
)

func (h *handler) workflow(w http.ResponseWriter, r *http.Request) {
	id := pathName(r, "id")
	wf, err := h.api.Workflow(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := workflowData{W: wf, Graph: layoutGraph(wf.Jobs)}
	var jids []string
	for i, j := range wf.Jobs {
		parents, distinct, repeats := textsafe.Distinct(j.DependsOn, maxParentsListed)
		d.Repeats += repeats
		if i >= maxJobRows {
			d.MoreJobs++
			continue
		}
		d.Jobs = append(d.Jobs, workflowRow{WorkflowJobStatus: j, Parents: parents, MoreParents: distinct - len(parents)})
		jids = append(jids, j.JID)
	}
	if d.Results, err = h.api.Results(r.Context(), jids, resultShown); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "workflow.html", "workflows", "Workflow "+id, d)
}

// maxDrawn is the most jobs a workflow's drawing shows; a larger one is listed only.
const maxDrawn = 300

// Sizes of the drawing, in SVG units.
const (
	boxW, boxH   = 150, 34
	colGap, rowG = 60, 14
	margin       = 10
)

// graph is a workflow drawn in layers: each job in the column after its deepest parent.
type graph struct {
	W, H  int
	Nodes []graphNode
	Edges []graphEdge // at most maxEdgesDrawn
	// AllEdges is how many dependencies the workflow has (each parent counted once per job):
	// more than len(Edges) when the drawing leaves some out.
	AllEdges int
}

type graphNode struct {
	X, Y        int
	Label, Full string // the name cut to fit, and whole (as the box's title)
	State       string
	Class       string // the CSS class of its state
}

type graphEdge struct{ X1, Y1, X2, Y2 int }

// layoutGraph places jobs in columns by depth (the longest chain of parents before them) and
// rows in name order; nil for more than maxDrawn jobs or a graph that is not acyclic (the
// stored graph is read from Redis, so it is not trusted). A parent named more than once is
// drawn once, and at most maxEdgesDrawn lines are drawn: the drawing's size is bounded
// whatever the stored graph holds.
func layoutGraph(all []exq.WorkflowJobStatus) *graph {
	if len(all) == 0 || len(all) > maxDrawn {
		return nil
	}
	jobs := make([]exq.WorkflowJobStatus, len(all))
	for i, j := range all {
		j.DependsOn, _, _ = textsafe.Distinct(j.DependsOn, 0)
		jobs[i] = j
	}
	index := make(map[string]int, len(jobs))
	for i, j := range jobs {
		index[j.Name] = i
	}
	depth := make([]int, len(jobs))
	state := make([]int, len(jobs)) // 0 unseen, 1 in progress, 2 done
	var visit func(i int) bool
	visit = func(i int) bool {
		switch state[i] {
		case 1:
			return false
		case 2:
			return true
		}
		state[i] = 1
		for _, p := range jobs[i].DependsOn {
			k, ok := index[p]
			if !ok {
				continue
			}
			if !visit(k) {
				return false
			}
			depth[i] = max(depth[i], depth[k]+1)
		}
		state[i] = 2
		return true
	}
	for i := range jobs {
		if !visit(i) {
			return nil
		}
	}
	rows := map[int]int{}
	g := &graph{}
	pos := make([][2]int, len(jobs))
	for i, j := range jobs {
		row := rows[depth[i]]
		rows[depth[i]]++
		x := margin + depth[i]*(boxW+colGap)
		y := margin + row*(boxH+rowG)
		pos[i] = [2]int{x, y}
		label := j.Name
		if r := []rune(label); len(r) > 20 {
			label = string(r[:19]) + "…"
		}
		g.Nodes = append(g.Nodes, graphNode{X: x, Y: y, Label: label, Full: truncate(j.Name, maxNameShown) + ": " + truncate(j.State, maxNameShown), State: j.State,
			Class: "st-" + stateClass(j.State)})
		g.W = max(g.W, x+boxW+margin)
		g.H = max(g.H, y+boxH+margin)
	}
	for i, j := range jobs {
		for _, p := range j.DependsOn {
			k, ok := index[p]
			if !ok {
				continue
			}
			g.AllEdges++
			if len(g.Edges) < maxEdgesDrawn {
				g.Edges = append(g.Edges, graphEdge{X1: pos[k][0] + boxW, Y1: pos[k][1] + boxH/2, X2: pos[i][0], Y2: pos[i][1] + boxH/2})
			}
		}
	}
	return g
}

// stateClass is a state as a CSS class name: one of the known states, else "other".
func stateClass(s string) string {
	switch s {
	case "waiting", "queued", "succeeded", "dead", "canceled":
		return s
	}
	return "other"
}
