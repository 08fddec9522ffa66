package main

import "context"

func (m *Main) runRules(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}
