package main

import "context"

func (m *Main) runDemo(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}

func (m *Main) runExampleBackend(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}

func (m *Main) runExampleHarness(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}
