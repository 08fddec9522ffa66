package main

import "context"

func (m *Main) runHTTP(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}

func (m *Main) runCA(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}
