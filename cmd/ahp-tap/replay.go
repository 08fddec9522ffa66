package main

import "context"

func (m *Main) runReplay(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}
