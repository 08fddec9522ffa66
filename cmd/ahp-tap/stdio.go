package main

import "context"

func (m *Main) runStdio(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}
