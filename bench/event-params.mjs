// The events of a lone PostgreSQL compat request's start and finish as parameters (issue 18 item 6,
// p-pgjson): what binding them costs svc and parsing them costs the server, for the parallel
// arrays svc sends today and for two one-parameter encodings, before changing any statement.
// The values are a warm lone request's, captured at 1dba1c24 (./event-params.json: the start's 76
// parameters, the finish's 96). Three encodings of the same events:
//   arrays: as bound today (`text[]`/`bigint[]` literals, pg's `arrayString` text: each payload
//           quoted and its `"` and `\` escaped);
//   json:   one JSON array text a group, each event `{"s":…,"t":…,"p":<payload as is>,"c":…,"k":…}`
//           (payloads are JSON text already, so no escaping), read by `json_to_recordset` with
//           `p json` (the `json` type keeps the payload's text byte for byte);
//   sep:    one text a group, columns split by U+001D and elements by U+001E, which
//           `JSON.stringify` never leaves raw in its output (read by `string_to_array`).
// svc's side: BENCH_TREES' (default this checkout) `bindMessage` of the whole statement, the
// encoding's text built in the timed part, fresh strings each time (as live), median of
// BENCH_EVENT_PARAMS_N (default 4000) a round, BENCH_EVENT_PARAMS_ROUNDS (default 3) processes.
// The server's side: a throwaway cluster (./pg-cluster.mjs), each parameter's text in 20000 rows of
// a temp table, `EXPLAIN ANALYZE` of the cast and the set-returning read over them: µs a row,
// i.e. a statement's parse of that parameter and its expansion (the scan's own cost given as
// `scan`, to subtract). `node bench/event-params.mjs`; not part of `npm run bench`.
import { readFileSync } from 'node:fs';
import { startPostgres } from './pg-cluster.mjs';
import { benchTrees, runTreeDrivers, showMedian } from './tree-drivers.mjs';

const fixture = new URL('./event-params.json', import.meta.url).pathname;
const { start, finish } = JSON.parse(readFileSync(fixture, 'utf8'));
const N = Number(process.env.BENCH_EVENT_PARAMS_N ?? 4000);
const ROUNDS = Number(process.env.BENCH_EVENT_PARAMS_ROUNDS ?? 3);

// The encodings, shared by the driver (as source) and the server part (evaluated here).
const encodings = String.raw`
const GS = '\x1d';
const RS = '\x1e';
/** One JSON array text of the events: payloads as they are (JSON text), no escaping. */
function jsonEvents(sids, types, payloads, ats, keys) {
  let out = '[';
  for (let i = 0; i < types.length; i++) {
    if (i) out += ',';
    const sid = Array.isArray(sids) ? sids[i] : sids;
    out += '{"s":' + JSON.stringify(sid) + ',"t":' + JSON.stringify(types[i]) + ',"p":' + payloads[i] + ',"c":' + ats[i] + (keys ? ',"k":' + keys[i] : '') + '}';
  }
  return out + ']';
}
/** One text of the events: columns by GS, elements by RS. */
function sepEvents(sids, types, payloads, ats, keys) {
  const columns = [types.join(RS), payloads.join(RS), ats.join(RS)];
  if (Array.isArray(sids)) columns.push(sids.join(RS));
  if (keys) columns.push(keys.join(RS));
  return columns.join(GS);
}
// Parameter places (0-based) in the captured statements: the start's session events $72..$75 and
// run events $26..$32; the finish's step-close arrays $1..$10, held run events $29..$31, session
// events $75..$79.
function startAs(encode, v) {
  const out = v.slice();
  out.splice(71, 4, encode(v[71], v[72], v[73], v[74]));
  out.splice(25, 7, encode('', [v[26], v[28], v[30]], [v[27], v[29], v[31]], [v[25], v[25], v[25]]));
  return out;
}
function finishAs(encode, v) {
  const out = v.slice();
  out.splice(74, 5, encode(v[74], v[75], v[76], v[77], v[78]));
  out.splice(28, 3, encode('', v[28], v[29], v[30]));
  out.splice(0, 10, encode === jsonEvents ? '[]' : '');
  return out;
}
`;

const driver = (tree) => `
import { bindMessage } from '${tree}/src/store/postgres/bind-message';
import { readFileSync } from 'node:fs';
${encodings}
const { start, finish } = JSON.parse(readFileSync(${JSON.stringify(fixture)}, 'utf8'));
const fresh = (x) => typeof x === 'string' ? (' ' + x).slice(1) : Array.isArray(x) ? x.map(fresh) : x;
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
function time(values, as) {
  const times = [];
  for (let i = 0; i < ${N}; i++) {
    const v = values.map(fresh);
    const t = process.hrtime.bigint();
    bindMessage('svc_bench', as ? as(v) : v);
    times.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  return median(times);
}
const result = {};
for (const [name, as] of [['arrays', undefined], ['json', (v) => v], ['sep', (v) => v]]) {
  result[name + 'Start'] = time(start, as && ((v) => startAs(name === 'json' ? jsonEvents : sepEvents, v)));
  result[name + 'Finish'] = time(finish, as && ((v) => finishAs(name === 'json' ? jsonEvents : sepEvents, v)));
}
const sizes = (v) => bindMessage('', v).length;
result.bytes = [sizes(start), sizes(finish), sizes(startAs(jsonEvents, start)), sizes(finishAs(jsonEvents, finish)),
  sizes(startAs(sepEvents, start)), sizes(finishAs(sepEvents, finish))];
result.params = [start.length, finish.length, startAs(jsonEvents, start).length, finishAs(jsonEvents, finish).length];
console.log(JSON.stringify(result));
`;

const trees = benchTrees();
const results = runTreeDrivers({ name: 'event-params', trees, rounds: ROUNDS, driver });
console.log(
  `svc's bind (and the encoding's text), µs a statement, median over ${ROUNDS} rounds of ${N} (min–max)`,
);
trees.forEach((tree, i) => {
  const r = results[i];
  console.log(
    `${tree}: parameters start/finish ${r[0].params.slice(0, 2).join('/')} → ${r[0].params.slice(2).join('/')}; Bind bytes arrays ${r[0].bytes.slice(0, 2).join('/')}, json ${r[0].bytes.slice(2, 4).join('/')}, sep ${r[0].bytes.slice(4).join('/')}`,
  );
  for (const name of ['arrays', 'json', 'sep'])
    console.log(
      `  ${name.padEnd(6)} start ${showMedian(r, `${name}Start`)}  finish ${showMedian(r, `${name}Finish`)}`,
    );
});

// The server's side.
const { jsonEvents, sepEvents } = new Function(`${encodings}; return { jsonEvents, sepEvents };`)();
const pg = await startPostgres();
try {
  const { default: driverPg } = await import('pg');
  const { prepareValue } = (await import('pg/lib/utils.js')).default;
  const c = new driverPg.Client({ connectionString: await pg.createDatabase('svc_event_params') });
  await c.connect();
  const groups = {
    startSession: [start[71], start[72], start[73], start[74]],
    finishSession: [finish[74], finish[75], finish[76], finish[77], finish[78]],
    finishHeld: ['', finish[28], finish[29], finish[30]],
  };
  const columns = [];
  const values = [];
  const add = (name, text) => {
    columns.push(name);
    values.push(text);
  };
  for (const [name, g] of Object.entries(groups)) {
    const arrays = g.filter(Array.isArray);
    for (const [k, a] of arrays.entries()) add(`${name}_a${k}`, prepareValue(a));
    add(`${name}_json`, jsonEvents(...g));
    add(`${name}_sep`, sepEvents(...g));
  }
  add('empty', '{}');
  await c.query(`CREATE TEMP TABLE tx (${columns.map((n) => `${n} text`).join(', ')})`);
  await c.query(
    `INSERT INTO tx SELECT ${columns.map((_, i) => `$${i + 1}`).join(', ')} FROM generate_series(1, 20000)`,
    values,
  );
  const split = (col, k, type = 'text') =>
    `string_to_array(split_part(${col}, E'\\x1d', ${k}), E'\\x1e')${type === 'text' ? '' : `::${type}[]`}`;
  const queries = {
    scan: 'SELECT count(*) FROM tx',
    'start session events, arrays': `SELECT count(*) FROM tx, unnest(startSession_a0::text[], startSession_a1::text[], startSession_a2::bigint[]) u`,
    'start session events, json': `SELECT count(*) FROM tx, json_to_recordset(startSession_json::json) AS u(s text, t text, p json, c bigint)`,
    'start session events, sep': `SELECT count(*) FROM tx, unnest(${split('startSession_sep', 1)}, ${split('startSession_sep', 2)}, ${split('startSession_sep', 3, 'bigint')}) u`,
    'finish session events, arrays': `SELECT count(*) FROM tx, unnest(finishSession_a0::text[], finishSession_a1::text[], finishSession_a2::text[], finishSession_a3::bigint[], finishSession_a4::bigint[]) u`,
    'finish session events, json': `SELECT count(*) FROM tx, json_to_recordset(finishSession_json::json) AS u(s text, t text, p json, c bigint, k bigint)`,
    'finish session events, sep': `SELECT count(*) FROM tx, unnest(${split('finishSession_sep', 1)}, ${split('finishSession_sep', 2)}, ${split('finishSession_sep', 3, 'bigint')}, ${split('finishSession_sep', 4)}, ${split('finishSession_sep', 5, 'bigint')}) u`,
    'finish held run events, arrays': `SELECT count(*) FROM tx, unnest(finishHeld_a0::text[], finishHeld_a1::text[], finishHeld_a2::bigint[]) u`,
    'finish held run events, json': `SELECT count(*) FROM tx, json_to_recordset(finishHeld_json::json) AS u(t text, p json, c bigint)`,
    'finish 10 empty arrays': `SELECT count(*) FROM tx, unnest(empty::text[], empty::text[], empty::boolean[], empty::text[], empty::double precision[], empty::boolean[], empty::boolean[], empty::text[], empty::text[], empty::text[]) u`,
    'finish empty json': `SELECT count(*) FROM tx, json_to_recordset('[]'::text::json) AS u(a text)`,
  };
  const server = Object.fromEntries(Object.keys(queries).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, sql] of Object.entries(queries)) {
      const { rows } = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`);
      server[name].push({ us: (rows[0]['QUERY PLAN'][0]['Execution Time'] * 1000) / 20000 });
    }
  }
  console.log(
    `the server's cast and read of each parameter, µs a statement (20000 rows, median over ${ROUNDS} rounds, min–max)`,
  );
  for (const [name, list] of Object.entries(server))
    console.log(`  ${name.padEnd(32)} ${showMedian(list, 'us')}`);
  await c.end();
} finally {
  pg.stop();
}
