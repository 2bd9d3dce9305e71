package main

import (
	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/returnpath"
)

// feedbackLoops is bounces.feedback_loops as the listener takes them.
func feedbackLoops(b config.Bounces) []returnpath.FeedbackLoop {
	out := make([]returnpath.FeedbackLoop, 0, len(b.FeedbackLoops))
	for _, fl := range b.FeedbackLoops {
		out = append(out, returnpath.FeedbackLoop{Address: fl.Address, Senders: fl.Senders, ForwardTo: fl.ForwardTo})
	}
	return out
}
