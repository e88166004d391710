// Package weirfaults drives a Weir broker's fault injection from a Go test: a plain HTTP client of
// the control channel a broker started with weir.faults.enable=true and
// weir.faults.listener=host:port serves (see the README, "Fault injection from any language").
package weirfaults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Client talks to the control channel at URL (http://host:port) with the broker's weir.faults.token.
type Client struct {
	URL   string
	Token string
	HTTP  *http.Client
}

// Status is GET /faults: injected answers sent per API, faults still armed, the switches.
type Status struct {
	Fired    map[string]int   `json:"fired"`
	Armed    []map[string]any `json:"armed"`
	Paused   bool             `json:"paused"`
	DiskFull bool             `json:"disk_full"`
}

func New(url, token string) *Client {
	return &Client{URL: url, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Error answers the next `times` requests of `api` (Kafka's name, "Produce") with Kafka error `code`
// ("NOT_LEADER_OR_FOLLOWER"); a non-empty topic (and partition >= 0) narrows it to that part of a request.
func (c *Client) Error(api, code string, times int, topic string, partition int) error {
	args := map[string]any{"api": api, "code": code, "times": times}
	if topic != "" {
		args["topic"] = topic
		if partition >= 0 {
			args["partition"] = partition
		}
	}
	return c.call("POST", "/faults/error", args, nil)
}

// Delay holds the answers to the next `times` requests of `api` back for `seconds`.
func (c *Client) Delay(api string, seconds float64, times int) error {
	return c.call("POST", "/faults/delay", map[string]any{"api": api, "seconds": seconds, "times": times}, nil)
}

// Disconnect closes the connection of the next `times` requests of `api` instead of answering.
func (c *Client) Disconnect(api string, times int) error {
	return c.call("POST", "/faults/disconnect", map[string]any{"api": api, "times": times}, nil)
}

func (c *Client) Clear() error    { return c.call("POST", "/faults/clear", map[string]any{}, nil) }
func (c *Client) Pause() error    { return c.call("POST", "/faults/pause", map[string]any{}, nil) }
func (c *Client) Resume() error   { return c.call("POST", "/faults/resume", map[string]any{}, nil) }
func (c *Client) DiskFull() error { return c.call("POST", "/faults/disk-full", map[string]any{}, nil) }
func (c *Client) DiskOK() error   { return c.call("POST", "/faults/disk-ok", map[string]any{}, nil) }

func (c *Client) Status() (Status, error) {
	var status Status
	err := c.call("GET", "/faults", nil, &status)
	return status, err
}

func (c *Client) call(method, path string, args map[string]any, into any) error {
	var body *bytes.Reader
	if args != nil {
		encoded, err := json.Marshal(args)
		if err != nil {
			return err
		}
		body = bytes.NewReader(encoded)
	} else {
		body = bytes.NewReader(nil)
	}
	request, err := http.NewRequest(method, c.URL+path, body)
	if err != nil {
		return err
	}
	request.Header.Set("Authorization", "Bearer "+c.Token)
	request.Header.Set("Content-Type", "application/json")
	answer, err := c.HTTP.Do(request)
	if err != nil {
		return err
	}
	defer answer.Body.Close()
	if answer.StatusCode != http.StatusOK {
		var refusal struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(answer.Body).Decode(&refusal)
		return fmt.Errorf("%s %s: %d %s", method, path, answer.StatusCode, refusal.Error)
	}
	if into != nil {
		return json.NewDecoder(answer.Body).Decode(into)
	}
	return nil
}
