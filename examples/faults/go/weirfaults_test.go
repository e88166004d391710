package weirfaults

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The broker under test: WEIR_BOOTSTRAP (host:port), WEIR_FAULTS_URL and WEIR_FAULTS_TOKEN.
func broker(t *testing.T) (string, *Client) {
	t.Helper()
	bootstrap, url := os.Getenv("WEIR_BOOTSTRAP"), os.Getenv("WEIR_FAULTS_URL")
	if bootstrap == "" || url == "" {
		t.Fatal("set WEIR_BOOTSTRAP and WEIR_FAULTS_URL (and WEIR_FAULTS_TOKEN) to a broker started for tests")
	}
	client := New(url, os.Getenv("WEIR_FAULTS_TOKEN"))
	if err := client.Clear(); err != nil {
		t.Fatal(err)
	}
	return bootstrap, client
}

// apiVersions sends ApiVersions v0 (a request any Kafka client sends first) on conn; no Kafka
// client library needed for that.
func apiVersions(t *testing.T, conn net.Conn, correlation int32) {
	t.Helper()
	clientID := "go-test"
	frame := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(clientID)))
	frame = binary.BigEndian.AppendUint16(frame, 18) // ApiVersions
	frame = binary.BigEndian.AppendUint16(frame, 0)
	frame = binary.BigEndian.AppendUint32(frame, uint32(correlation))
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(clientID)))
	frame = append(frame, clientID...)
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
}

// answer reads one response frame and returns its correlation id.
func answer(conn net.Conn, deadline time.Duration) (int32, error) {
	conn.SetReadDeadline(time.Now().Add(deadline))
	head := make([]byte, 8)
	if _, err := io.ReadFull(conn, head); err != nil {
		return 0, err
	}
	rest := make([]byte, binary.BigEndian.Uint32(head[:4])-4)
	if _, err := io.ReadFull(conn, rest); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(head[4:8])), nil
}

func dial(t *testing.T, bootstrap string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", bootstrap, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestDisconnectClosesInsteadOfAnswering(t *testing.T) {
	bootstrap, faults := broker(t)
	if err := faults.Disconnect("ApiVersions", 1); err != nil {
		t.Fatal(err)
	}
	conn := dial(t, bootstrap)
	apiVersions(t, conn, 1)
	if _, err := answer(conn, 30*time.Second); !errors.Is(err, io.EOF) && !strings.Contains(fmt_(err), "reset") {
		t.Fatalf("want the connection closed, got %v", err)
	}
	status, err := faults.Status()
	if err != nil || status.Fired["ApiVersions"] != 1 {
		t.Fatalf("fired %v, %v", status.Fired, err)
	}
}

func TestDelayHoldsOneAnswerBack(t *testing.T) {
	bootstrap, faults := broker(t)
	if err := faults.Delay("ApiVersions", 0.5, 1); err != nil {
		t.Fatal(err)
	}
	conn := dial(t, bootstrap)
	started := time.Now()
	apiVersions(t, conn, 7)
	if id, err := answer(conn, 30*time.Second); err != nil || id != 7 {
		t.Fatalf("answer %d, %v", id, err)
	}
	if held := time.Since(started); held < 500*time.Millisecond {
		t.Fatalf("answered after %v, before the delay", held)
	}
}

func TestPauseThenResume(t *testing.T) {
	bootstrap, faults := broker(t)
	conn := dial(t, bootstrap)
	if err := faults.Pause(); err != nil {
		t.Fatal(err)
	}
	defer faults.Resume()
	apiVersions(t, conn, 3)
	var timeout net.Error
	if _, err := answer(conn, 500*time.Millisecond); !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Fatalf("a paused broker answered: %v", err)
	}
	if err := faults.Resume(); err != nil {
		t.Fatal(err)
	}
	if id, err := answer(conn, 30*time.Second); err != nil || id != 3 {
		t.Fatalf("after resume: %d, %v", id, err)
	}
}

func TestAFaultKafkaNeverGivesIsRefused(t *testing.T) {
	_, faults := broker(t)
	err := faults.Error("Produce", "GROUP_ID_NOT_FOUND", 1, "", -1)
	if err == nil || !strings.Contains(err.Error(), "never answers Produce with GROUP_ID_NOT_FOUND") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

// The same channel from the command line: weir-admin faults, when WEIR_ADMIN names it.
func TestWeirAdminFaults(t *testing.T) {
	_, faults := broker(t)
	admin := os.Getenv("WEIR_ADMIN")
	if admin == "" {
		t.Fatal("set WEIR_ADMIN to the weir-admin command")
	}
	out, err := exec.Command(admin, "faults", "error", "InitProducerId", "COORDINATOR_NOT_AVAILABLE", "--times", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	status, err := faults.Status()
	if err != nil || len(status.Armed) != 1 || status.Armed[0]["remaining"] != float64(2) {
		t.Fatalf("armed %v, %v", status.Armed, err)
	}
}

func fmt_(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
