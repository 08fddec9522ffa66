package tap

// Forgotten is how many exchanges the session's conversations dropped to
// stay in bounded memory (Conversation.Forgotten): Records does not list
// them.
func (s *Session) Forgotten() int {
	n := s.retiredForgotten
	for _, e := range s.order {
		n += e.Conversation().Forgotten()
	}
	return n
}
