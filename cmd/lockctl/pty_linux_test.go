package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// At an interactive prompt the command shares lockctl's process group, so
// it can use the terminal and gets Ctrl-C from it, once: lockctl does not
// pass on what the terminal already delivered, but still passes on the
// rest.
func TestRunInteractive(t *testing.T) {
	master, slave := openPTY(t)
	s := newScene(t)
	env, argv := s.command("tty", "WAIT=1")
	cmd := exec.Command(bin, append([]string{"run", "--store", "memory://", "r", "--"}, argv...)...)
	cmd.Env = append(append(baseEnv(), env...), "TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A session of its own with the terminal as controlling terminal, as
	// a login shell would have: lockctl's group is in the foreground.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var waitErr error
	done := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	go func() { // drain the terminal's output
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})

	pid, _ := s.ready("tty")
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != cmd.Process.Pid {
		t.Errorf("the command's process group is %d (%v); want lockctl's, %d", pgid, err, cmd.Process.Pid)
	}
	if _, err := master.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the command did not get the terminal's SIGINT", func() bool {
		return slices.Contains(s.signals("tty"), "interrupt")
	})
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the command did not get SIGUSR1 through lockctl", func() bool {
		return slices.Contains(s.signals("tty"), "user defined signal 1")
	})
	if sigs := s.signals("tty"); !slices.Equal(sigs, []string{"interrupt", "user defined signal 1"}) {
		t.Errorf("signals = %q; want one interrupt, then user defined signal 1", sigs)
	}
	s.finish("tty")
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("lockctl run at a terminal: %v", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lockctl run at a terminal did not exit")
	}
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("reading the pseudo-terminal's number: %v", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// check redraws a progress line on a terminal, and erases it before the
// summary; elsewhere it writes no escape sequences (see TestCheck).
func TestCheckProgressOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	cmd := exec.Command(bin, "check", "--workers", "2", "--duration", "700ms")
	cmd.Env = baseEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	out, _ := readTerminal(master, "")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("check on a terminal: %v", err)
	}
	var text string
	select {
	case text = <-out:
	case <-time.After(30 * time.Second):
		t.Fatal("no end of output from the terminal")
	}
	i := strings.Index(text, "\r\x1b[Kcheck  ")
	j := strings.LastIndex(text, "\r\x1b[K")
	if i < 0 || j < i || !strings.HasPrefix(text[j+4:], "lockctl check:") || !strings.Contains(text, "PASS") {
		t.Errorf("check on a terminal wrote %q; want progress lines, erased before the summary", text)
	}
}

// On a terminal, release --force asks before it deletes a lock, and a
// "no" keeps it (isTerminal must tell a terminal from a pipe).
func TestReleaseAsksOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	cmd := exec.Command(bin, "release", "--force", "--store", "memory://", "r")
	cmd.Env = baseEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	out, asked := readTerminal(master, "[y/N] ")
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("release --force on a terminal did not ask")
	}
	if _, err := master.Write([]byte("n\n")); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	text := <-out
	if code := cmd.ProcessState.ExitCode(); code != exitFailure || !strings.Contains(text, "not released") {
		t.Errorf("release --force answered no: exit %d (%v); terminal %q", code, err, text)
	}
}

// readTerminal reads what the terminal of master shows until it closes,
// and sends it on out; seen is closed once it shows prompt.
func readTerminal(master *os.File, prompt string) (out <-chan string, seen <-chan struct{}) {
	text := make(chan string, 1)
	shown := make(chan struct{})
	go func(notify chan struct{}) {
		var b []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b = append(b, buf[:n]...)
			if prompt != "" && notify != nil && strings.Contains(string(b), prompt) {
				close(notify)
				notify = nil
			}
			if err != nil {
				text <- string(b)
				return
			}
		}
	}(shown)
	return text, shown
}
