package smtpclient

import (
	"strings"

	"github.com/emersion/go-sasl"
)

// loginClient is a SASL LOGIN client (draft-murchison-sasl-login) for
// smarthosts that offer only LOGIN. go-sasl has one, but it sends the user
// name as an initial response and then insists on the exact challenge
// "Password:", which servers that prompt "Username:" first (or in another
// case) fail. This one sends no initial response and answers by prompt.
type loginClient struct {
	username, password string
	step               int
}

// newLoginClient returns a LOGIN client for username and password.
func newLoginClient(username, password string) sasl.Client {
	return &loginClient{username: username, password: password}
}

// Start names the mechanism; no initial response, so the server prompts.
func (a *loginClient) Start() (string, []byte, error) { return "LOGIN", nil, nil }

// Next answers a prompt: a prompt naming the user gets the user name, one
// naming the password gets the password; an unrecognised prompt gets the
// user name first and the password second, the order every server uses.
func (a *loginClient) Next(challenge []byte) ([]byte, error) {
	a.step++
	prompt := strings.ToLower(string(challenge))
	switch {
	case a.step > 2:
		return nil, sasl.ErrUnexpectedServerChallenge
	case strings.Contains(prompt, "user"):
		return []byte(a.username), nil
	case strings.Contains(prompt, "pass"):
		return []byte(a.password), nil
	case a.step == 1:
		return []byte(a.username), nil
	default:
		return []byte(a.password), nil
	}
}
