package smtpcodes

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// waitWords must appear somewhere in a text before a number in it is read as
// a wait: without them "552 message size 20 m" or a rate "per 1 h" would be
// taken for one.
var waitWords = regexp.MustCompile(`(?i)grey ?list|gray ?list|try again|retry|wait|later|come back|defer|delay|postpone|resend|again in|again after`)

// waitAmount is a whole number with a time unit. The number must not follow
// a letter, digit or one of ".:/#=_-" so that parts of enhanced codes
// (4.7.1), IP addresses, URLs, queue IDs and negative numbers are not read;
// the unit must end at a word boundary ("5 messages" is not five minutes).
var waitAmount = regexp.MustCompile(`(?i)(?:^|[^0-9a-z.:/#=_\-])([0-9]{1,9})[ \t]{0,2}(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b`)

// clockWait is milter-greylist's "please come back in 00:05:00" (hh:mm:ss
// after "in"; after "at" it would be a time of day, which we don't read).
var clockWait = regexp.MustCompile(`(?i)\bin[ \t]+([0-9]{1,3}):([0-5][0-9]):([0-5][0-9])\b`)

// RetryHint reads the wait a transient reply's text asks for, as greylisting
// servers often say: "greylisted for 300 seconds", "try again in 5 minutes",
// "(wait 60s)", "come back in 00:05:00". It returns false when the text
// names no wait, names it ambiguously or names zero (a zero wait would invite
// a hot loop; the caller's backoff applies instead). It caps nothing (the
// caller does) but never returns a negative or overflowed duration.
func RetryHint(text string) (time.Duration, bool) {
	if !waitWords.MatchString(text) {
		return 0, false
	}
	if m := clockWait.FindStringSubmatch(text); m != nil {
		h, _ := strconv.ParseInt(m[1], 10, 64)
		mi, _ := strconv.ParseInt(m[2], 10, 64)
		s, _ := strconv.ParseInt(m[3], 10, 64)
		d := time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second
		return d, d > 0
	}
	m := waitAmount.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	unit := unitOf(strings.ToLower(m[2]))
	if n > math.MaxInt64/int64(unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

func unitOf(u string) time.Duration {
	switch u[0] {
	case 'm':
		return time.Minute
	case 'h':
		return time.Hour
	case 'd':
		return 24 * time.Hour
	}
	return time.Second
}
