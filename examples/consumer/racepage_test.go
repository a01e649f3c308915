package main

import (
	"html"
	"os"
	"regexp"
	"strings"
	"testing"
)

// checkRacePage holds the HTML page of a lost race explored at the
// consumer's statements to what happened: the held worker's hold is drawn
// on its bar, each connection's column names the worker whose delivery
// used it, and the delivery badged as the one that broke duplicate-effect
// is the one whose connection wrote the second payment.
func checkRacePage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "two deliveries raced at every statement boundary")
	if i < 0 {
		t.Fatalf("the page has no race check:\n%s", page)
	}
	race := page[i:]
	race = race[:strings.Index(race, "</article>")]
	if strings.Contains(race, "first in schedule 1 (unforced)") {
		// The race was lost with no worker held (it can be, on any
		// machine): the timeline is that schedule's, with no hold to
		// draw and no connection to match to a worker.
		t.Log("the race failed first unforced: no hold on the page to check")
		return
	}
	if !regexp.MustCompile(`<span class="held" style="left:[0-9.]+%;width:[0-9.]+%" title="held (before|after) connection \d&#39;s statement \d+ for `).MatchString(race) {
		t.Errorf("the race's hold is not drawn on a worker's bar:\n%s", race)
	}
	heads := regexp.MustCompile(`<th>connection (\d) — worker (\d)&#39;s</th>`).FindAllStringSubmatch(race, -1)
	if len(heads) != 2 {
		t.Fatalf("the statements' columns do not name the workers of both connections:\n%s", race)
	}
	// The second INSERT INTO payments answered INSERT 0 1 (on MySQL,
	// INSERT 1): its column.
	payer := ""
	for _, row := range regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`).FindAllStringSubmatch(race, -1) {
		cells := regexp.MustCompile(`(?s)<td>(.*?)</td>`).FindAllStringSubmatch(row[1], -1)
		for c, cell := range cells {
			text := html.UnescapeString(cell[1])
			if strings.Contains(text, "INSERT INTO payments") && insertedOne.MatchString(text) && c < len(heads) {
				payer = heads[c][2]
			}
		}
	}
	if payer == "" {
		t.Fatalf("no connection's INSERT INTO payments is on the page:\n%s", race)
	}
	// A lane holding the diagnosis's evidence is marked (class
	// "lane evidence", the statements named beside its worker).
	broken := regexp.MustCompile(`<div class="lane[^"]*" data-lane="(\d)"><div class="lane-name">(?:[^<]|<span[^>]*>[^<]*</span>)*</div><div class="track">\n<div class="bar [^"]* broken`).FindAllStringSubmatch(race, -1)
	if len(broken) != 1 || broken[0][1] != payer {
		t.Errorf("the badge is on the lanes %v, want worker %s's, whose connection wrote the second payment:\n%s", broken, payer, race)
	}
}

// insertedOne is a statement's text in a trace whose answer says one row
// was inserted: INSERT 0 1 on PostgreSQL, INSERT 1 on MySQL.
var insertedOne = regexp.MustCompile(`→ INSERT (0 )?1$`)
