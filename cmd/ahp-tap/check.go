package main

import "context"

func (m *Main) runCheck(ctx context.Context, args []string) error {
	return usageError("not implemented yet")
}
