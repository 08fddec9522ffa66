package rules

import (
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// The conduct rules (COND-1…COND-11) judge how a harness dispatches one
// event across every backend of a registration. No single link can make
// them, so they are not tap.Rules: the conduct package's Timeline, fed by
// the sessions of every tapped link, reports under these RuleInfos. They
// live here, beside the catalogue, so that every check has its rules
// listed in one place (docs/checks.md, `ahp-tap rules`).
var (
	CondOrder        = info("COND-1/order", vocab.Cond1, "an interceptor later in the registration's hooks array received the event before an earlier one")
	CondConcurrent   = info("COND-1/concurrent", vocab.Cond1, "two backends had the same event outstanding as hooks/intercept at once")
	CondAfterStop    = info("COND-2/after-stop", vocab.Cond2, "a hooks/intercept of the event after an accepted deny or flow stop, or a fail-closed failure, ended the chain")
	CondFailOpen     = warnInfo("COND-3/fail-open-stopped", vocab.Cond3, "after a fail-open failure, a later matching interceptor never received the event")
	CondObserveEarly = info("COND-4/observe-before-settled", vocab.Cond4, "an observer received an intercepted event while the chain was still deciding")
	CondPermission   = info("COND-5/permission", vocab.Cond5, "params.state.permission lost what an earlier answer decided (deny over ask over allow over none)")
	CondAccumulate   = info("COND-5/accumulate", vocab.Cond5, "state.instructions or state.injections lost earlier entries, gained a failed answer's, or missed an accepted answer's")
	CondInput        = info("COND-5/input", vocab.Cond5, "a later interceptor's tool input is not the effective input an earlier accepted modify produced")
	CondSecondCopy   = info("COND-6/second-copy", vocab.Cond6, "a backend called with hooks/intercept for an event also got it as hooks/observe, without an observe subscription for it")
	CondContinuation = info("COND-7/continuations", vocab.Cond7, "remainingContinuations of the next turn.finish.before of a turn does not follow the previous chain's continue or stop")
	CondDenyRan      = info("COND-8/ran-after-deny", vocab.Cond8, "an after event with an outcome other than denied for an operation that was denied")
	CondAfterUnknown = warnInfo("COND-9/after-without-before", vocab.Cond9, "a tool.after whose call.id no tool.before had, where a tapped subscription receives every tool.before")
	CondSecondAfter  = info("COND-9/second-after", vocab.Cond9, "a second tool.after (another event id) for one call.id")
	CondSecondBefore = info("COND-9/second-before", vocab.Cond9, "a second tool.before (another event id) for one call.id: a retry under a new identity")
	CondParent       = info("COND-9/parent", vocab.Cond9, "parentEventId names a call id, an event of another source, itself or a descendant, or for an elicitation result an event that is not its request")
	CondRetryLate    = info("COND-10/retry-late", vocab.Cond10, "a retry of an intercept to the same backend sent after the original deadline")
	CondFailureNames = info("COND-11/names", vocab.Cond11, "a hook.failure names a backend that did not fail for its parent event, or a policy other than that subscription's")
	CondFailureNone  = infoOnly("COND-11/none-sent", vocab.Cond11, "an intercept failed, a tapped hook observes hook.failure, and no hook.failure named the failure (AHP allows that)")
	CondGaveUpLate   = warnInfo("COND-10/gave-up-late", vocab.Cond10, "the chain's next step after an unanswered intercept came more than 1 s after its deadline")
)

// ConductRuleInfos lists the conduct rules, in catalogue order.
func ConductRuleInfos() []tap.RuleInfo {
	return []tap.RuleInfo{CondOrder, CondConcurrent, CondAfterStop, CondFailOpen, CondObserveEarly,
		CondPermission, CondAccumulate, CondInput, CondSecondCopy, CondContinuation, CondDenyRan,
		CondAfterUnknown, CondSecondAfter, CondSecondBefore, CondParent, CondRetryLate, CondGaveUpLate, CondFailureNames, CondFailureNone}
}

// infoOnly is info for a rule that reports context a reader needs, never a
// fault (level info).
func infoOnly(ruleID string, check vocab.CheckID, summary string) tap.RuleInfo {
	ri := info(ruleID, check, summary)
	ri.Level = tap.Info
	return ri
}
