// The fixture's handler as a Node.js user writes it (a handle() function, on
// better-sqlite3 because node:sqlite is missing from Node 20), replaying a CloudEvents
// NDJSON capture: one JSON object a line, event id in `id`, order in `data.orderId`.
// It is the baseline a user would write by hand; compare redeliver's replay of the
// same file against it, side by side, in one run.
//
//   npm install            (once, in this folder)
//   node peer.js [--prepared] CAPTURE.ndjson [:memory:|DBFILE]
//
// As written, the handler prepares its statements on every call; --prepared prepares them
// once (the fastest a careful Node.js user gets from the same logic). Quote both.
//
// Prints one line: deliveries, processed, duplicates, conflicts, seconds, deliveries/s.
'use strict';
const fs = require('fs');
const readline = require('readline');
const Database = require('better-sqlite3');

const args = process.argv.slice(2);
const prepared = args[0] === '--prepared';
if (prepared) args.shift();
const [capture, target = ':memory:'] = args;
if (!capture) { console.error('usage: node peer.js [--prepared] CAPTURE.ndjson [:memory:|DBFILE]'); process.exit(2); }
if (target !== ':memory:') for (const s of ['', '-wal', '-shm']) fs.rmSync(target + s, { force: true });
const db = new Database(target);
if (target !== ':memory:') { db.pragma('journal_mode = WAL'); db.pragma('synchronous = NORMAL'); }
db.exec(`CREATE TABLE processed(event_id TEXT PRIMARY KEY, order_id TEXT NOT NULL);
  CREATE TABLE shipments(id INTEGER PRIMARY KEY, event_id TEXT UNIQUE NOT NULL, order_id TEXT NOT NULL);`);

const cache = new Map();
const prepare = prepared
  ? (sql) => { let st = cache.get(sql); if (!st) { st = db.prepare(sql); cache.set(sql, st); } return st; }
  : (sql) => db.prepare(sql);

function handle(event) {
  db.exec('BEGIN IMMEDIATE');
  try {
    const saved = prepare('SELECT order_id FROM processed WHERE event_id = ?').get(event.id);
    if (saved) {
      if (saved.order_id !== event.orderId) throw new Error('Event identity conflict');
      const result = prepare('SELECT id FROM shipments WHERE event_id = ?').get(event.id);
      db.exec('COMMIT');
      return { id: Number(result.id), duplicate: true };
    }
    prepare('INSERT INTO processed VALUES (?, ?)').run(event.id, event.orderId);
    const row = prepare('INSERT INTO shipments(event_id, order_id) VALUES (?, ?)').run(event.id, event.orderId);
    db.exec('COMMIT');
    return { id: Number(row.lastInsertRowid), duplicate: false };
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}

(async () => {
  const t0 = process.hrtime.bigint();
  let n = 0, processed = 0, duplicates = 0, conflicts = 0;
  const lines = readline.createInterface({ input: fs.createReadStream(capture), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const ev = JSON.parse(line);
    n++;
    try {
      const r = handle({ id: ev.id, orderId: String(ev.data && ev.data.orderId) });
      if (r.duplicate) duplicates++; else processed++;
    } catch (e) {
      if (/identity conflict/.test(e.message)) conflicts++; else throw e;
    }
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(`${prepared ? 'prepared ' : ''}deliveries=${n} processed=${processed} duplicates=${duplicates} conflicts=${conflicts} seconds=${s.toFixed(3)} deliveries_per_s=${Math.round(n / s)}`);
})();
