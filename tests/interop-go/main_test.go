// Package interop runs Apache RocketMQ's Go client
// (github.com/apache/rocketmq-client-go/v2, pinned in go.mod) against a
// real `ferrocket start`. scripts/test-go.sh runs it.
package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	home := interopHome()
	if err := os.MkdirAll(home, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "cannot create %s: %v\n", home, err)
		return 1
	}
	// The client logs through logrus to stderr at info level by default:
	// keep CI output readable by writing it to a file at warn level
	// (FERROCKET_GO_LOG_LEVEL=info or debug for more).
	logPath := filepath.Join(home, "rocketmq-client-go.log")
	if err := rlog.SetOutputPath(logPath); err != nil {
		fmt.Fprintf(os.Stderr, "cannot log to %s: %v\n", logPath, err)
		return 1
	}
	level := os.Getenv("FERROCKET_GO_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	rlog.SetLogLevel(level)
	defer stopAll()
	return m.Run()
}
