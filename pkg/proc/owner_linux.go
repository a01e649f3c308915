package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// socketOwner finds the process, among root and its descendants, that
// holds the TCP socket whose local end is client and remote end server,
// and returns it with its ancestors up to root, nearest first.
func socketOwner(client, server netip.AddrPort, root int) ([]int, error) {
	inode, err := socketInode(client, server)
	if err != nil {
		return nil, err
	}
	parents, err := parentsOf()
	if err != nil {
		return nil, err
	}
	for _, pid := range tree(root, parents) {
		if holds(pid, inode) {
			chain := []int{pid}
			for p := pid; p != root && parents[p] != 0 && len(chain) < 1024; {
				p = parents[p]
				chain = append(chain, p)
			}
			return chain, nil
		}
	}
	return nil, fmt.Errorf("no process under %d holds socket %d", root, inode)
}

// socketInode is the inode of the TCP socket from client to server, as
// the kernel's tables list it (IPv4, and IPv6 for a dual-stack socket).
func socketInode(client, server netip.AddrPort) (uint64, error) {
	want := func(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
	client, server = want(client), want(server)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			local, remote, inode, ok := parseSocketLine(sc.Text())
			if ok && inode != 0 && want(local) == client && want(remote) == server {
				f.Close()
				return inode, nil
			}
		}
		f.Close()
	}
	return 0, fmt.Errorf("no TCP socket from %s to %s", client, server)
}

// parentsOf reads every process's parent from /proc/PID/stat.
func parentsOf() (map[int]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[pid] = ppid
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no process in /proc")
	}
	return out, nil
}

// tree is root and its descendants, root first.
func tree(root int, parents map[int]int) []int {
	children := map[int][]int{}
	for pid, ppid := range parents {
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// holds reports whether process pid has a file descriptor on the socket
// with the given inode.
func holds(pid int, inode uint64) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
			return true
		}
	}
	return false
}
