package smtpcodes

import (
	"testing"
	"time"
)

func TestRetryHint(t *testing.T) {
	tests := []struct {
		text string
		want time.Duration // 0: no hint
	}{
		// Postgrey's default text names no wait.
		{"Greylisted, see http://postgrey.schweikert.ch/help/example.com.html", 0},
		{"4.2.0 Greylisted, please try again in 300 seconds", 300 * time.Second},
		{"Greylisted for 300 seconds (see http://postgrey.schweikert.ch/help/example.com.html)", 300 * time.Second},
		// Exim/greylistd and sqlgrey style.
		{"greylisted for 5 minutes", 5 * time.Minute},
		{"Deferred: greylisted - please try again in 5 minutes", 5 * time.Minute},
		{"4.7.1 Greylisted for 5 minutes (2)", 5 * time.Minute},
		// milter-greylist.
		{"4.7.1 Greylisting in action, please come back in 00:05:00", 5 * time.Minute},
		{"Greylisting in action, please come back in 1:00:30", time.Hour + 30*time.Second},
		{"try again in 5 minutes", 5 * time.Minute},
		{"retry in 1 hour", time.Hour},
		{"Please try again later (wait 60s)", 60 * time.Second},
		{"try again in 10 seconds", 10 * time.Second},
		{"4.7.1 Greylisting in effect, retry after 120 s", 120 * time.Second},
		{"Service unavailable, try again after 2 min", 2 * time.Minute},
		{"Temporarily deferred, please retry in 2 hrs", 2 * time.Hour},
		{"Try again in 1 day", 24 * time.Hour},
		{"GREYLISTED: TRY AGAIN IN 15 MINUTES", 15 * time.Minute},
		{"greylisted, retry in 90sec", 90 * time.Second},
		// Texts that name no wait.
		{"4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered. Please resend your message at a later time. If the user is able to receive mail at that time, your message will be delivered. For more information, please visit https://support.google.com/mail/?p=ReceivingRate", 0},
		{"4.7.0 Try again later, closing connection. (EHLO) d9443c01a7336-2e5ab1b5bfesi12345si.123 - gsmtp", 0},
		{"4.7.500 Server busy. Please try again later from [192.0.2.1]. (S77719) [BN8NAM12FT012.eop-nam12.prod.protection.outlook.com]", 0},
		{"[TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes", 0},
		{"Internal resource temporarily unavailable - https://community.mimecast.com/docs/DOC-1369#451", 0},
		{"4.3.2 Service currently unavailable", 0},
		{"Mailbox full: 20 m used", 0},                   // no wait word
		{"Please try again later, queued 5 messages", 0}, // "m" must end at a word boundary
		{"try again in 1.5 minutes", 0},                  // fractions are not read as a different number
		{"try again in -5 minutes", 0},                   // never negative
		{"try again in 0 seconds", 0},                    // zero would invite a hot loop
		{"try again in 99999999999999999999 seconds", 0}, // too many digits
		{"try again in 999999999 days", 0},               // overflows time.Duration
		{"retry at 10:30:00", 0},                         // a time of day, not a wait
		{"try again later, queue id 4.7.1A23 in 300", 0}, // a number without a unit
	}
	for _, tt := range tests {
		got, ok := RetryHint(tt.text)
		if ok != (tt.want != 0) || got != tt.want {
			t.Errorf("RetryHint(%q) = %v, %v; want %v", tt.text, got, ok, tt.want)
		}
	}
	// The largest wait that still fits is returned, not wrapped around.
	if got, ok := RetryHint("try again in 106751 days"); !ok || got != 106751*24*time.Hour {
		t.Errorf("106751 days: %v %v", got, ok)
	}
}

func FuzzRetryHint(f *testing.F) {
	for _, s := range []string{
		"try again in 5 minutes", "greylisted for 300 seconds", "come back in 00:05:00",
		"try again in 999999999 d", "wait 60s", "retry in 1 hour", "later 4.7.1 120 s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, ok := RetryHint(text)
		if ok && d <= 0 {
			t.Fatalf("RetryHint(%q) = %v, true: must be positive", text, d)
		}
		if !ok && d != 0 {
			t.Fatalf("RetryHint(%q) = %v, false: must be zero", text, d)
		}
	})
}
