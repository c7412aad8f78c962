package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

// Shell completion (exq completion bash|zsh|fish) of the names an operator types: queues,
// nodes and periodic jobs, read from Redis with the command line's --redis-url and --namespace.

type completer func(ctx context.Context, a *app) ([]string, error)

// complete completes the first positional argument with what names lists.
func (a *app) complete(names completer) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeNames(names)
	}
}

// completeNames lists names for a flag's value or an argument; nothing when Redis cannot say.
func (a *app) completeNames(names completer) ([]string, cobra.ShellCompDirective) {
	nss, err := parseNamespaces(a.namespace)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	a.nss = nss
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if a.connect(ctx, false) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer a.close()
	out, err := names(ctx, a)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func queueNames(ctx context.Context, a *app) ([]string, error) {
	states, err := a.view().QueueStates(ctx)
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = s.Name
	}
	return names, err
}

func nodeNames(ctx context.Context, a *app) ([]string, error) {
	ps, err := a.view().Processes(ctx)
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Identity
	}
	return names, err
}

func cronNames(ctx context.Context, a *app) ([]string, error) {
	if a.api == nil {
		return nil, nil // periodic jobs live in one namespace
	}
	states, err := a.api.PeriodicJobs(ctx)
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = s.Name
	}
	return names, err
}

// setNames completes --set.
func setNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"dead", "retry", "schedule"}, cobra.ShellCompDirectiveNoFileComp
}
