-- The handler's tables. The constraints depend on the strategy: the safe
-- ones are guarded by keys, the unsafe ones are written without them on purpose.
CREATE TABLE redeliver_meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- The processed marker: one row per handled event (and consumer), in a table
-- ordered by insertion (rowid) with its key in an index of its own: with
-- random ids a delivery then changes a leaf of the narrow index at random,
-- not a leaf of the whole rows (which is what a replay's page cache holds).
CREATE TABLE processed(
  event_id     TEXT NOT NULL,
  consumer     TEXT NOT NULL,
  identity     TEXT NOT NULL,
  business_key TEXT,
  processed_at TEXT NOT NULL{{if .MarkerKey}},
  PRIMARY KEY(event_id, consumer){{end}}
);
{{- if not .MarkerKey}}
CREATE INDEX processed_event ON processed(event_id, consumer);
{{- end}}

-- The business effect: a shipment, a charge, an email.
CREATE TABLE "{{.Effect}}"(
  id           INTEGER PRIMARY KEY,
  event_id     TEXT NOT NULL,
  consumer     TEXT NOT NULL,
  business_key TEXT,
  payload      TEXT NOT NULL,
  created_at   TEXT NOT NULL{{if .EffectUnique}},
  UNIQUE(event_id, consumer){{end}}{{if .KeyUnique}},
  UNIQUE(business_key){{end}}
);
{{- if not .EffectUnique}}
CREATE INDEX "{{.Effect}}_event" ON "{{.Effect}}"(event_id, consumer);
{{- end}}
{{- if and .UsesKey (not .KeyUnique)}}
CREATE INDEX "{{.Effect}}_key" ON "{{.Effect}}"(business_key);
{{- end}}
