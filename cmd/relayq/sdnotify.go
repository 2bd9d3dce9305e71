package main

// systemd readiness (Type=notify): READY=1 once every listener is open,
// STOPPING=1 when shutdown begins. Without NOTIFY_SOCKET (not under
// systemd) nothing is sent.

import (
	"log/slog"

	"github.com/coreos/go-systemd/v22/daemon"
)

// notifySystemd sends one state line to systemd's notify socket.
func notifySystemd(log *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("systemd notification failed", "state", state, "err", err)
	}
}
