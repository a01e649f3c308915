package main

// The CI jobs docs/ci.md shows are real files under docs/ci/, checked
// here so that a job a team copies cannot rot: the GitHub workflows by
// actionlint, the GitLab pipelines by a YAML parse and a check of the
// keywords GitLab's schema defines; both against the shape docs/ci.md
// promises (the job's database host, the commands, the reports). The
// example consumer's tests run the redeliver commands of the jobs
// (examples/consumer, TestCIJobs).

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// actionlint is the linter of GitHub workflows the CI files are held to,
// run through the Go module proxy (.ci/run fetches it before the tests).
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

// ciVariants are the jobs, each on GitHub and GitLab.
// docs/ci.md shows the first whole, and links the others.
var ciVariants = []struct{ name, github, gitlab, dbHostGitHub, dbHostGitLab string }{
	{"postgres", "docs/ci/github/postgres.yml", "docs/ci/gitlab/postgres.gitlab-ci.yml", "127.0.0.1", "postgres"},
	{"rabbitmq", "docs/ci/github/rabbitmq.yml", "docs/ci/gitlab/rabbitmq.gitlab-ci.yml", "127.0.0.1", "postgres"},
}

// runActionlint runs actionlint on files; it skips the test when the
// module proxy cannot be reached (and fails under CI, where it must run).
func runActionlint(t *testing.T, files ...string) (string, error) {
	t.Helper()
	c := exec.Command("go", append([]string{"run", actionlint, "-no-color"}, files...)...)
	out, err := c.CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte(".yml:")) {
		offline := regexp.MustCompile(`dial tcp|no such host|i/o timeout|connection refused|proxyconnect|TLS handshake|network is unreachable|GOPROXY=off|GOFLAGS=-mod=mod`)
		if offline.Match(out) && os.Getenv("CI") == "" {
			t.Skipf("the Go module proxy cannot be reached, so actionlint (%s) cannot be fetched: the GitHub workflows in docs/ci are not linted:\n%s", actionlint, out)
		}
		t.Fatalf("go run %s: %v\n%s", actionlint, err, out)
	}
	return string(out), err
}

// TestCIGitHubWorkflowsLint: actionlint finds nothing in the GitHub
// workflows, and does find a mistake planted in a copy of one (so the
// lint is known to read them).
func TestCIGitHubWorkflowsLint(t *testing.T) {
	t.Parallel()
	var files []string
	for _, v := range ciVariants {
		files = append(files, v.github)
	}
	matched, _ := filepath.Glob("docs/ci/github/*.yml")
	sort.Strings(files)
	if !slices.Equal(matched, files) {
		t.Fatalf("docs/ci/github holds %v; the test checks %v", matched, files)
	}
	if out, err := runActionlint(t, files...); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
	src, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.yml")
	planted := strings.Replace(string(src), "${{ !cancelled() }}", "${{ !canceled() }}", 1)
	if planted == string(src) {
		t.Fatalf("%s has no ${{ !cancelled() }} to break", files[0])
	}
	if err := os.WriteFile(broken, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runActionlint(t, broken); err == nil || !strings.Contains(out, "canceled") {
		t.Fatalf("actionlint accepted an undefined function: %v\n%s", err, out)
	}
}

// TestCIGitLabPipelines: the GitLab pipelines parse, and hold only what
// GitLab's schema allows where they use it.
func TestCIGitLabPipelines(t *testing.T) {
	t.Parallel()
	matched, _ := filepath.Glob("docs/ci/gitlab/*")
	var files []string
	for _, v := range ciVariants {
		files = append(files, v.gitlab)
	}
	sort.Strings(files)
	if !slices.Equal(matched, files) {
		t.Fatalf("docs/ci/gitlab holds %v; the test checks %v", matched, files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if problems := checkGitLab(src); len(problems) > 0 {
				t.Errorf("%s:\n%s", f, strings.Join(problems, "\n"))
			}
		})
	}
}

// TestCheckGitLab: each rule of checkGitLab catches the mistake it is for.
func TestCheckGitLab(t *testing.T) {
	const ok = "stages: [test]\nj:\n  stage: test\n  script: [echo]\n"
	if p := checkGitLab([]byte(ok)); len(p) > 0 {
		t.Fatalf("a valid pipeline: %v", p)
	}
	tests := []struct{ name, src, want string }{
		{"not YAML", "j: [", "not YAML"},
		{"unknown stage", "stages: [test]\nj:\n  stage: tset\n  script: [echo]\n", `job j: stage "tset" is not one of the stages`},
		{"no script", "stages: [test]\nj:\n  stage: test\n", "job j has no script"},
		{"empty script", "stages: [test]\nj:\n  stage: test\n  script: []\n", "job j: script is empty"},
		{"script of maps", "stages: [test]\nj:\n  stage: test\n  script: [{a: b}]\n", "job j: script entry must be a string"},
		{"unknown job keyword", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  artefacts: {}\n", `job j: unknown keyword "artefacts"`},
		{"service without name", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  services: [{alias: db}]\n", "job j: a service needs name"},
		{"bad alias", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  services: [{name: postgres:17, alias: Post_gres}]\n", `job j: service alias "Post_gres" is not a host name`},
		{"unknown service key", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  services: [{name: p, env: {A: b}}]\n", `job j: unknown service keyword "env"`},
		{"artifacts when", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  artifacts: {when: allways}\n", `job j: artifacts when "allways"`},
		{"unknown artifacts key", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  artifacts: {path: [x]}\n", `job j: unknown artifacts keyword "path"`},
		{"junit not a path", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  artifacts: {reports: {junit: {a: b}}}\n", "job j: artifacts:reports:junit must be a path or a list of paths"},
		{"unknown report", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  artifacts: {reports: {junitxml: a.xml}}\n", `job j: unknown report "junitxml"`},
		{"job when", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  when: sometimes\n", `job j: when "sometimes"`},
		{"allow_failure", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  allow_failure: maybe\n", "job j: allow_failure must be true, false or {exit_codes: …}"},
		{"allow_failure exit codes", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  allow_failure: {exit_codes: [one]}\n", "job j: allow_failure exit_codes must be whole numbers"},
		{"timeout", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  timeout: soon\n", `job j: timeout "soon" is not a duration`},
		{"variables", "stages: [test]\nj:\n  stage: test\n  script: [echo]\n  variables: {A: [1]}\n", "job j: variable A must be a string"},
		{"stages not strings", "stages: [{a: b}]\nj:\n  script: [echo]\n", "stages must be a list of names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkGitLab([]byte(tt.src))
			for _, s := range p {
				if strings.Contains(s, tt.want) {
					return
				}
			}
			t.Errorf("problems %q; want one containing %q", p, tt.want)
		})
	}
}

// TestCIJobsShape: the jobs are the ones docs/ci.md describes: the
// database host the job reaches (loopback on GitHub, the service alias on
// GitLab: the hosts where redeliver runs reset statements), the same
// redeliver commands on both systems, JUnit and JSON reports, and the
// first job of docs/ci shown whole in docs/ci.md, the others linked.
func TestCIJobsShape(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range ciVariants {
		t.Run(v.name, func(t *testing.T) {
			gh, gl := readYAML(t, v.github), readYAML(t, v.gitlab)
			ghJob, glJob := onlyJob(t, v.github, gh["jobs"]), onlyJob(t, v.gitlab, gl)
			ghEnv, _ := ghJob["env"].(map[string]any)
			glEnv, _ := glJob["variables"].(map[string]any)
			for _, c := range []struct {
				file, host string
				env        map[string]any
			}{{v.github, v.dbHostGitHub, ghEnv}, {v.gitlab, v.dbHostGitLab, glEnv}} {
				dsn, _ := c.env["DATABASE_URL"].(string)
				u, err := url.Parse(dsn)
				if err != nil || u.Hostname() != c.host {
					t.Errorf("%s: DATABASE_URL %q; want one on host %s", c.file, dsn, c.host)
				}
			}
			ghCmds, glCmds := githubRedeliverCommands(t, v.github, ghJob), gitlabRedeliverCommands(t, v.gitlab, glJob)
			if len(ghCmds) != 2 || !slices.Equal(ghCmds, glCmds) {
				t.Errorf("redeliver commands differ or are not a run and a replay:\n%s: %q\n%s: %q", v.github, ghCmds, v.gitlab, glCmds)
			}
			for _, c := range ghCmds {
				for _, want := range []string{"--report junit=redeliver-reports/", "--report json=redeliver-reports/"} {
					if !strings.Contains(c, want) {
						t.Errorf("%q writes no %s report", c, want)
					}
				}
			}
			for _, f := range []string{v.github, v.gitlab} {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case i == 0 && !bytes.Contains(doc, []byte("```yaml\n"+string(src)+"```\n")):
					t.Errorf("docs/ci.md does not show %s as it is (a ```yaml block holding the whole file)", f)
				case i > 0 && !bytes.Contains(doc, []byte("("+strings.TrimPrefix(f, "docs/")+")")):
					t.Errorf("docs/ci.md does not link %s", f)
				}
			}
		})
	}
}

func readYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(src, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// onlyJob is the one job of a workflow's jobs, or of a pipeline.
func onlyJob(t *testing.T, file string, jobs any) map[string]any {
	t.Helper()
	m, _ := jobs.(map[string]any)
	var found []map[string]any
	for k, v := range m {
		if j, ok := v.(map[string]any); ok && !strings.HasPrefix(k, ".") && (j["script"] != nil || j["steps"] != nil) {
			found = append(found, j)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d jobs; want one", file, len(found))
	}
	return found[0]
}

// githubRedeliverCommands are the redeliver command lines of a workflow
// job's run steps, without exec.
func githubRedeliverCommands(t *testing.T, file string, job map[string]any) []string {
	t.Helper()
	steps, _ := job["steps"].([]any)
	var out []string
	for _, s := range steps {
		m, _ := s.(map[string]any)
		run, _ := m["run"].(string)
		run = strings.TrimPrefix(strings.TrimSpace(run), "exec ")
		if strings.HasPrefix(run, "redeliver ") {
			out = append(out, strings.Join(strings.Fields(run), " "))
		}
	}
	return out
}

// gitlabRedeliverCommands are the redeliver command lines of a GitLab
// job's script.
func gitlabRedeliverCommands(t *testing.T, file string, job map[string]any) []string {
	t.Helper()
	script, _ := job["script"].([]any)
	var out []string
	for _, s := range script {
		line, _ := s.(string)
		if strings.HasPrefix(line, "redeliver ") {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return out
}

// GitLab CI keywords, as its schema defines them.
var (
	gitlabGlobal = []string{"default", "include", "stages", "variables", "workflow", "image", "services", "cache", "before_script", "after_script", "spec"}
	gitlabJob    = []string{"after_script", "allow_failure", "artifacts", "before_script", "cache", "coverage", "dast_configuration", "dependencies", "environment", "extends", "hooks", "identity", "id_tokens", "image", "inherit", "interruptible", "manual_confirmation", "needs", "pages", "parallel", "release", "resource_group", "retry", "rules", "run", "script", "secrets", "services", "stage", "tags", "timeout", "trigger", "variables", "when"}
	gitlabSvc    = []string{"name", "alias", "entrypoint", "command", "variables", "pull_policy", "docker", "kubernetes"}
	gitlabArt    = []string{"paths", "exclude", "expire_in", "expose_as", "name", "public", "access", "reports", "untracked", "when"}
	gitlabRep    = []string{"accessibility", "annotations", "api_fuzzing", "browser_performance", "coverage_report", "codequality", "container_scanning", "coverage_fuzzing", "cyclonedx", "dast", "dependency_scanning", "dotenv", "junit", "license_scanning", "load_performance", "metrics", "requirements", "sast", "secret_detection", "terraform"}
	gitlabWhen   = []string{"on_success", "on_failure", "never", "always", "manual", "delayed"}
	gitlabArtW   = []string{"on_success", "on_failure", "always"}
	hostLabel    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
	gitlabDur    = regexp.MustCompile(`^(\d+\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w)\s*)+$`)
)

// checkGitLab parses a .gitlab-ci.yml and checks the parts of GitLab's
// schema a copy-paste job uses: stages, and for each job its keywords,
// stage, script, services, artifacts and reports, when, allow_failure,
// timeout and variables. It returns one sentence per problem.
func checkGitLab(src []byte) []string {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return []string{"not YAML: " + err.Error()}
	}
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	stages := []string{".pre", "build", "test", "deploy", ".post"}
	if s, ok := doc["stages"]; ok {
		list, ok := s.([]any)
		stages = []string{".pre", ".post"}
		for _, e := range list {
			name, isStr := e.(string)
			if !isStr {
				ok = false
			}
			stages = append(stages, name)
		}
		if !ok || len(list) == 0 {
			add("stages must be a list of names")
		}
	}
	checkVars := func(job string, v any) {
		m, ok := v.(map[string]any)
		if v != nil && !ok {
			add("job %s: variables must be a mapping", job)
		}
		for k, val := range m {
			switch x := val.(type) {
			case string, int, float64, bool:
			case map[string]any:
				if _, ok := x["value"]; !ok {
					add("job %s: variable %s needs value", job, k)
				}
			default:
				add("job %s: variable %s must be a string or {value: …}", job, k)
			}
		}
	}
	checkVars("(global)", doc["variables"])
	for name, v := range doc {
		if slices.Contains(gitlabGlobal, name) || strings.HasPrefix(name, ".") {
			continue
		}
		job, ok := v.(map[string]any)
		if !ok {
			add("job %s must be a mapping", name)
			continue
		}
		for k := range job {
			if !slices.Contains(gitlabJob, k) {
				add("job %s: unknown keyword %q", name, k)
			}
		}
		if s, ok := job["stage"].(string); ok && !slices.Contains(stages, s) {
			add("job %s: stage %q is not one of the stages %v", name, s, stages)
		} else if !ok && job["stage"] != nil {
			add("job %s: stage must be a name", name)
		}
		switch s := job["script"].(type) {
		case nil:
			if job["trigger"] == nil && job["extends"] == nil {
				add("job %s has no script", name)
			}
		case string:
		case []any:
			if len(s) == 0 {
				add("job %s: script is empty", name)
			}
			for _, e := range s {
				if _, ok := e.(string); !ok {
					add("job %s: script entry must be a string, not %v", name, e)
				}
			}
		default:
			add("job %s: script must be a command or a list of commands", name)
		}
		services, _ := job["services"].([]any)
		if job["services"] != nil && services == nil {
			add("job %s: services must be a list", name)
		}
		for _, s := range services {
			switch x := s.(type) {
			case string:
			case map[string]any:
				for k := range x {
					if !slices.Contains(gitlabSvc, k) {
						add("job %s: unknown service keyword %q", name, k)
					}
				}
				if n, ok := x["name"].(string); !ok || n == "" {
					add("job %s: a service needs name: its image", name)
				}
				if a, ok := x["alias"]; ok {
					if as, _ := a.(string); !hostLabel.MatchString(as) {
						add("job %s: service alias %q is not a host name", name, a)
					}
				}
				checkVars(name, x["variables"])
			default:
				add("job %s: a service must be an image name or {name: …}", name)
			}
		}
		if a, ok := job["artifacts"]; ok {
			art, ok := a.(map[string]any)
			if !ok {
				add("job %s: artifacts must be a mapping", name)
			}
			for k := range art {
				if !slices.Contains(gitlabArt, k) {
					add("job %s: unknown artifacts keyword %q", name, k)
				}
			}
			if w, ok := art["when"]; ok {
				if ws, _ := w.(string); !slices.Contains(gitlabArtW, ws) {
					add("job %s: artifacts when %q must be one of %v", name, w, gitlabArtW)
				}
			}
			if r, ok := art["reports"]; ok {
				reports, _ := r.(map[string]any)
				for k := range reports {
					if !slices.Contains(gitlabRep, k) {
						add("job %s: unknown report %q", name, k)
					}
				}
				if j, ok := reports["junit"]; ok && !paths(j) {
					add("job %s: artifacts:reports:junit must be a path or a list of paths", name)
				}
			}
			if ps, ok := art["paths"]; ok && !paths(ps) {
				add("job %s: artifacts paths must be a list of paths", name)
			}
		}
		if w, ok := job["when"]; ok {
			if ws, _ := w.(string); !slices.Contains(gitlabWhen, ws) {
				add("job %s: when %q must be one of %v", name, w, gitlabWhen)
			}
		}
		switch af := job["allow_failure"].(type) {
		case nil, bool:
		case map[string]any:
			codes := af["exit_codes"]
			if l, ok := codes.([]any); ok {
				for _, c := range l {
					if _, ok := c.(int); !ok {
						codes = nil
					}
				}
			} else if _, ok := codes.(int); !ok {
				codes = nil
			}
			if codes == nil || len(af) != 1 {
				add("job %s: allow_failure exit_codes must be whole numbers", name)
			}
		default:
			add("job %s: allow_failure must be true, false or {exit_codes: …}", name)
		}
		if to, ok := job["timeout"]; ok {
			if s, _ := to.(string); !gitlabDur.MatchString(s) {
				add("job %s: timeout %q is not a duration such as 20m or 1h 30m", name, to)
			}
		}
		checkVars(name, job["variables"])
	}
	sort.Strings(p)
	return p
}

// paths says whether v is a non-empty path or a non-empty list of them.
func paths(v any) bool {
	switch x := v.(type) {
	case string:
		return x != ""
	case []any:
		for _, e := range x {
			if s, ok := e.(string); !ok || s == "" {
				return false
			}
		}
		return len(x) > 0
	}
	return false
}
