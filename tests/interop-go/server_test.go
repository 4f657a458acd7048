package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	readyTimeout = 60 * time.Second
	stopGrace    = 15 * time.Second
	portTriesMax = 5
	logTailLines = 80
	// Small CommitLog segments: a test broker preallocates 64 MiB, not 1 GiB.
	segmentBytes = "67108864"
)

// Ferrocket is one real `ferrocket start` (a name server and a broker as
// children of one supervisor process) on free 127.0.0.1 ports. Its output
// goes to a log file under the interop home (kept), its data to a
// directory that stop deletes. It is stopped by the pid it started:
// SIGTERM, then SIGKILL after a grace period (the supervisor stops its
// children; they also get SIGTERM when it dies).
type Ferrocket struct {
	name        string
	cmd         *exec.Cmd
	exited      chan struct{}
	namesrvPort int
	brokerPort  int
	workDir     string
	stopOnce    sync.Once
}

var (
	liveMu sync.Mutex
	live   = map[int]*Ferrocket{}
)

// stopAll stops every server still running (TestMain calls it last).
func stopAll() {
	liveMu.Lock()
	servers := make([]*Ferrocket, 0, len(live))
	for _, s := range live {
		servers = append(servers, s)
	}
	liveMu.Unlock()
	for _, s := range servers {
		s.stop()
	}
}

func binary() (string, error) {
	bin := os.Getenv("FERROCKET_BIN")
	if bin == "" {
		return "", errors.New("FERROCKET_BIN is not set; build ferrocket (cargo build --bin ferrocket) and run scripts/test-go.sh")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(abs); err != nil || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("ferrocket binary not found or not executable at %s; build it (cargo build --bin ferrocket) or set FERROCKET_BIN", abs)
	}
	return abs, nil
}

// interopHome is where server logs and client logs go.
func interopHome() string {
	if home := os.Getenv("FERROCKET_INTEROP_HOME"); home != "" {
		if abs, err := filepath.Abs(home); err == nil {
			return abs
		}
		return home
	}
	return filepath.Join(os.TempDir(), "ferrocket-interop-go")
}

// startFerrocket starts a server for t (and its subtests) with extra
// broker settings (`key=value`, RocketMQ names). It is stopped when t is
// done; when t failed, its log tail is printed first.
func startFerrocket(t *testing.T, settings ...string) *Ferrocket {
	t.Helper()
	var last error
	for attempt := 1; attempt <= portTriesMax; attempt++ {
		server, err := launch(t.Name(), settings)
		if err != nil {
			t.Fatalf("starting ferrocket: %v", err)
		}
		err = server.waitReady()
		if err == nil {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("==== %s, log tail:\n%s\n==== end of log tail", server, server.logTail())
				}
				server.stop()
			})
			return server
		}
		server.stop()
		var taken errPortTaken
		if !errors.As(err, &taken) {
			t.Fatalf("%v", err)
		}
		last = err
	}
	t.Fatalf("no free ports in %d tries: %v", portTriesMax, last)
	return nil
}

func launch(name string, settings []string) (*Ferrocket, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	namesrvPort, err := freePort(-1)
	if err != nil {
		return nil, err
	}
	brokerPort, err := freePairBase(namesrvPort)
	if err != nil {
		return nil, err
	}
	workDir := filepath.Join(interopHome(), "servers", uniqueName(sanitize(name)))
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"start",
		"--listen-addr", "127.0.0.1",
		"--namesrv-port", strconv.Itoa(namesrvPort),
		"--broker-port", strconv.Itoa(brokerPort),
		"--data-dir", filepath.Join(workDir, "data"),
		"--broker-set", "mappedFileSizeCommitLog=" + segmentBytes,
		// Test data must not depend on how full the host's disk is.
		"--broker-set", "diskSpaceCleanForciblyRatio=100",
	}
	for _, s := range settings {
		args = append(args, "--broker-set", s)
	}
	logFile, err := os.OpenFile(filepath.Join(workDir, "ferrocket.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = workDir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	rustLog := os.Getenv("RUST_LOG")
	if rustLog == "" {
		rustLog = "info"
	}
	cmd.Env = append(os.Environ(), "RUST_LOG="+rustLog, "NO_COLOR=1", "HOME="+workDir)
	// If this test process dies (a panic, `go test -timeout`), the kernel
	// sends the supervisor SIGTERM.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	server := &Ferrocket{name: name, cmd: cmd, exited: make(chan struct{}),
		namesrvPort: namesrvPort, brokerPort: brokerPort, workDir: workDir}
	go func() {
		_ = cmd.Wait()
		close(server.exited)
	}()
	liveMu.Lock()
	live[cmd.Process.Pid] = server
	liveMu.Unlock()
	return server, nil
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, name)
}

// freePort returns a loopback port free now (and neither other nor other+1).
func freePort(other int) (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != other && port != other+1 {
			return port, nil
		}
	}
}

// freePairBase returns a port P with P and P+1 (the broker's HA port) free now.
func freePairBase(avoid int) (int, error) {
	for i := 0; i < 50; i++ {
		port, err := freePort(avoid)
		if err != nil {
			return 0, err
		}
		if port >= 65535 || port+1 == avoid {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+1))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("found no two adjacent free ports")
}

// errPortTaken means a server could not bind its port: try other ports.
type errPortTaken struct{ log string }

func (e errPortTaken) Error() string { return "port taken:\n" + e.log }

func (s *Ferrocket) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Ferrocket) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	namesrvUp := "ferrocket namesrv listening on " + s.NamesrvAddr()
	brokerUp := "ferrocket broker listening on " + s.BrokerAddr()
	for {
		log := s.logText()
		if strings.Contains(log, namesrvUp) && strings.Contains(log, brokerUp) {
			break
		}
		if !s.alive() {
			if strings.Contains(log, "in use") || strings.Contains(log, "os error 98") {
				return errPortTaken{log}
			}
			return fmt.Errorf("ferrocket exited (%v) before listening; its output:\n%s", s.cmd.ProcessState, log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ferrocket did not listen within %v; its output:\n%s", readyTimeout, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The first route lookup must not race the broker's first registration.
	for {
		out, _ := s.admin("cluster", "list")
		if strings.Contains(out, s.BrokerAddr()) {
			return nil
		}
		if time.Now().After(deadline) || !s.alive() {
			return fmt.Errorf("broker %s did not register with %s; its output:\n%s",
				s.BrokerAddr(), s.NamesrvAddr(), s.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Ferrocket) NamesrvAddr() string { return "127.0.0.1:" + strconv.Itoa(s.namesrvPort) }
func (s *Ferrocket) BrokerAddr() string  { return "127.0.0.1:" + strconv.Itoa(s.brokerPort) }

func (s *Ferrocket) String() string {
	return fmt.Sprintf("ferrocket %s (pid %d, namesrv %s, broker %s, log %s)", s.name,
		s.cmd.Process.Pid, s.NamesrvAddr(), s.BrokerAddr(), s.logFile())
}

// admin runs `ferrocket admin -n NAMESRV ARGS` and returns its output.
func (s *Ferrocket) admin(args ...string) (string, error) {
	bin, err := binary()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"admin", "-n", s.NamesrvAddr()}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ferrocket admin %s: %v:\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// CreateTopic creates topic with queues read and write queues and waits
// until the name server routes it.
func (s *Ferrocket) CreateTopic(t *testing.T, topic string, queues int) string {
	t.Helper()
	n := strconv.Itoa(queues)
	if _, err := s.admin("topic", "create", "--topic", topic, "--broker-addr", s.BrokerAddr(), "-r", n, "-w", n); err != nil {
		t.Fatalf("%v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		route, _ := s.admin("topic", "route", "--topic", topic)
		if strings.Contains(route, s.BrokerAddr()) {
			return topic
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s has no route after 30 s: %s", topic, route)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Ferrocket) logFile() string { return filepath.Join(s.workDir, "ferrocket.log") }

func (s *Ferrocket) logText() string {
	data, err := os.ReadFile(s.logFile())
	if err != nil {
		return ""
	}
	return string(data)
}

func (s *Ferrocket) logTail() string {
	lines := strings.Split(s.logText(), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// stop sends SIGTERM to exactly the pid this server started, SIGKILL
// after the grace period, and deletes its data directory.
func (s *Ferrocket) stop() {
	s.stopOnce.Do(func() {
		if s.alive() {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(stopGrace):
				fmt.Fprintf(os.Stderr, "%s ignored SIGTERM; killing it\n", s)
				_ = s.cmd.Process.Kill()
				select {
				case <-s.exited:
				case <-time.After(stopGrace):
				}
			}
		}
		liveMu.Lock()
		delete(live, s.cmd.Process.Pid)
		liveMu.Unlock()
		if err := os.RemoveAll(filepath.Join(s.workDir, "data")); err != nil {
			fmt.Fprintf(os.Stderr, "could not delete %s: %v\n", filepath.Join(s.workDir, "data"), err)
		}
	})
}
