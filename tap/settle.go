package tap

// Settle ends x without a JSON-RPC response: it was answered at the
// transport level (an HTTP status without a JSON-RPC body, such as a 401
// or 403), so nothing will answer it any more. x is no longer pending and
// outcome says how it ended. Rules call it from Note.
func (c *Conversation) Settle(x *Exchange, outcome string) {
	c.removePending(x)
	x.Outcome = outcome
	c.forget() // a settled exchange is dropped with the answered ones
}
