package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// machine describes where and on what a run happened.
type machine struct {
	CPU        string   `json:"cpu"`
	Cores      int      `json:"cores"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Go         string   `json:"go"`
	OS         string   `json:"os"`
	Redis      string   `json:"redis"`
	Memcached  string   `json:"memcached"`
	Etcd       string   `json:"etcd,omitempty"`     // when its section ran
	Postgres   string   `json:"postgres,omitempty"` // when its section ran
	Lockkit    string   `json:"lockkit"`            // the commit, and whether the tree had changes
	Libraries  []string `json:"libraries"`
	LoadStart  string   `json:"loadAvgAtStart"`
	LoadEnd    string   `json:"loadAvgAtEnd"`
	Date       string   `json:"date"`
}

// comparedModules are the modules whose versions the report names.
var comparedModules = []string{
	"github.com/redis/rueidis",
	"github.com/redis/go-redis/v9",
	"github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock",
	"github.com/bradfitz/gomemcache",
	"go.etcd.io/etcd/client/v3",
	"github.com/jackc/pgx/v5",
}

func describe(s *servers) machine {
	m := machine{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC().Format(time.RFC3339), LoadStart: loadAvg(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", Linux " + strings.TrimSpace(string(b))
	}
	m.Redis, m.Memcached = s.versions()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			for _, want := range comparedModules {
				if d.Path == want {
					m.Libraries = append(m.Libraries, d.Path+" "+d.Version)
				}
			}
		}
	}
	m.Lockkit = lockkitCommit()
	return m
}

// lockkitCommit returns the commit of the working tree the harness runs
// in, with "+ changes" when it has uncommitted changes, or "unknown".
func lockkitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += " + changes"
	}
	return commit
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
