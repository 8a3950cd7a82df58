// An OTLP/HTTP trace receiver for the specs: POST /v1/traces with an OTLP/JSON
// ExportTraceServiceRequest (what @opentelemetry/exporter-trace-otlp-http and claudelua send).
// Each request is checked against the OTLP/JSON rules (hex ids of the right length, nanosecond
// times as decimal strings, a kind), answered with an ExportTraceServiceResponse, and each of
// its spans printed as one JSON line: { service, traceId, spanId, parentSpanId, name, kind,
// status, attributes: { key: value } }. The first line is { port }.
//   node otlp_receiver.mjs
import http from 'node:http';

const value = (v) => {
  if (v === undefined || v === null) return null;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(value);
  return null;
};
const attrs = (list) => Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
const hex = (s, n) => typeof s === 'string' && s.length === n && /^[0-9a-f]+$/.test(s);
const nanos = (s) => (typeof s === 'string' && /^[0-9]+$/.test(s)) || Number.isInteger(s);

function check(span) {
  const bad = [];
  if (!hex(span.traceId, 32)) bad.push('traceId');
  if (!hex(span.spanId, 16)) bad.push('spanId');
  if (span.parentSpanId && !hex(span.parentSpanId, 16)) bad.push('parentSpanId');
  if (!nanos(span.startTimeUnixNano) || !nanos(span.endTimeUnixNano)) bad.push('times');
  if (BigInt(span.endTimeUnixNano) < BigInt(span.startTimeUnixNano)) bad.push('end < start');
  if (typeof span.name !== 'string' || !(span.kind >= 0 && span.kind <= 5)) bad.push('name/kind');
  return bad;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    if (!String(req.headers['content-type']).startsWith('application/json')) {
      res.writeHead(415).end();
      return;
    }
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      res.writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 3, message: String(e) }));
      return;
    }
    const problems = [];
    for (const rs of body.resourceSpans ?? []) {
      const resource = attrs(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          const bad = check(s);
          if (bad.length) problems.push(`${s.name}: ${bad.join(', ')}`);
          process.stdout.write(JSON.stringify({ service: resource['service.name'],
            scope: ss.scope?.name, traceId: s.traceId, spanId: s.spanId,
            parentSpanId: s.parentSpanId || null, name: s.name, kind: s.kind,
            status: s.status?.code ?? 0, attributes: attrs(s.attributes),
            headers: { authorization: req.headers.authorization ?? null }, bad }) + '\n');
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(problems.length
      ? { partialSuccess: { rejectedSpans: String(problems.length), errorMessage: problems.join('; ') } }
      : {}));
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
