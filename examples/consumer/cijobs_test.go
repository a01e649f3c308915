package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestCIJobs runs the redeliver commands of the CI jobs docs/ci.md shows
// (docs/ci/github/*.yml, docs/ci/gitlab/*.gitlab-ci.yml), as the jobs run
// them: from a folder holding examples/ and the service built as
// bin/consumer, with the job's DATABASE_URL (and AMQP) pointed at the
// local PostgreSQL (and RabbitMQ) in place of the job's service
// containers. Each job passes; its reports land where the job publishes
// them; the password in the job's DATABASE_URL shows nowhere in the
// output.
func TestCIJobs(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []struct {
		name, github, gitlab string
		broker               bool
	}{
		{"postgres", "docs/ci/github/postgres.yml", "docs/ci/gitlab/postgres.gitlab-ci.yml", false},
		{"rabbitmq", "docs/ci/github/rabbitmq.yml", "docs/ci/gitlab/rabbitmq.gitlab-ci.yml", true},
	} {
		t.Run(job.name, func(t *testing.T) {
			defer parallelInHeavy(t)()
			cmds := githubCommands(t, filepath.Join(root, job.github))
			if gl := gitlabCommands(t, filepath.Join(root, job.gitlab)); strings.Join(gl, "\n") != strings.Join(cmds, "\n") {
				t.Fatalf("the GitHub and GitLab jobs run different commands:\n%q\n%q", cmds, gl)
			}
			if len(cmds) != 2 {
				t.Fatalf("%s: %d redeliver commands, want a run and a replay: %q", job.github, len(cmds), cmds)
			}
			// The job's working folder: the checkout (examples/) and the
			// service it built (bin/consumer).
			work := t.TempDir()
			if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(work, "examples")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(bin, filepath.Join(work, "bin", "consumer")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(work, "redeliver-reports"), 0o755); err != nil {
				t.Fatal(err)
			}
			// The jobs' DATABASE_URL carries a password (postgres); the
			// local server trusts the connection and ignores it.
			u, err := url.Parse(freshSchema(t, pg))
			if err != nil {
				t.Fatal(err)
			}
			const password = "ci-secret-password"
			u.User = url.UserPassword(u.User.Username(), password)
			env := map[string]string{"DATABASE_URL": u.String(), "PORT": freePort(t)}
			if job.broker {
				brokerSlot(t)
				amqpQueue(t, env)
			}
			withPlainRedeliver(t, env)
			for _, c := range cmds {
				if strings.ContainsAny(c, "\"'$\\|;&<>`") {
					t.Fatalf("%q: this test splits a command on spaces, and this one needs a shell", c)
				}
				args := strings.Fields(strings.TrimPrefix(c, "redeliver "))
				o := redeliverIn(t, work, env, args...)
				if o.exit != 0 || !strings.Contains(o.stdout, "PASS: ") {
					t.Fatalf("%s: want exit 0 and PASS, got\n%s", c, o)
				}
				if strings.Contains(o.stdout+o.stderr, password) {
					t.Errorf("%s: the output shows the database password:\n%s", c, o)
				}
			}
			for _, f := range []string{"run-junit.xml", "run.json", "replay-junit.xml", "replay.json"} {
				data, err := os.ReadFile(filepath.Join(work, "redeliver-reports", f))
				if err != nil {
					t.Errorf("the job publishes redeliver-reports/%s: %v", f, err)
					continue
				}
				if strings.HasSuffix(f, ".json") && !json.Valid(data) {
					t.Errorf("redeliver-reports/%s is not JSON", f)
				}
				if strings.Contains(string(data), password) {
					t.Errorf("redeliver-reports/%s shows the database password", f)
				}
			}
		})
	}
}

// redeliverIn is redeliver run from dir (a job's working folder) rather
// than the repository root.
func redeliverIn(t *testing.T, dir string, env map[string]string, args ...string) outcome {
	t.Helper()
	c, marker := redeliverCmd(env, args...)
	c.Dir = dir
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	assertNoneLeft(t, marker)
	return outcome{exit: exitOf(err), stdout: stdout.String(), stderr: stderr.String()}
}

// githubCommands are the redeliver commands of a workflow's run steps.
func githubCommands(t *testing.T, file string) []string {
	var wf struct {
		Jobs map[string]struct {
			Steps []struct{ Run string }
		}
	}
	readJob(t, file, &wf)
	var out []string
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			run := strings.TrimPrefix(strings.TrimSpace(s.Run), "exec ")
			if strings.HasPrefix(run, "redeliver ") {
				out = append(out, strings.Join(strings.Fields(run), " "))
			}
		}
	}
	return out
}

// gitlabCommands are the redeliver commands of a pipeline's job scripts.
func gitlabCommands(t *testing.T, file string) []string {
	var pl map[string]any
	readJob(t, file, &pl)
	var out []string
	for _, j := range pl {
		m, _ := j.(map[string]any)
		script, _ := m["script"].([]any)
		for _, line := range script {
			if s, _ := line.(string); strings.HasPrefix(s, "redeliver ") {
				out = append(out, strings.Join(strings.Fields(s), " "))
			}
		}
	}
	return out
}

func readJob(t *testing.T, file string, v any) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
