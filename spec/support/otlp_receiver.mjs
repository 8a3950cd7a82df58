// An OTLP/HTTP trace receiver for the specs: POST /v1/traces with an ExportTraceServiceRequest,
// OTLP/JSON (application/json) or protobuf (application/x-protobuf), what
// @opentelemetry/exporter-trace-otlp-http / -proto and claudelua send. Protobuf is decoded by
// protobufjs with the code generated from the official opentelemetry-proto definitions (the
// copy @opentelemetry/otlp-transformer 0.216 ships, installed as otlp-transformer-protobufjs),
// then read as OTLP/JSON (ids as hex, times as decimal strings). Each request is checked
// against the OTLP/JSON rules (hex ids of the right length, nanosecond times as decimal
// strings, a kind), answered with an ExportTraceServiceResponse, and each of its spans
// printed as one JSON line: { service, traceId, spanId, parentSpanId, name, kind, status,
// attributes: { key: value }, flags, encoding }. The first line is { port }.
//   node otlp_receiver.mjs
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const proto = require('otlp-transformer-protobufjs/build/src/generated/root.js').opentelemetry.proto;
const Request = proto.collector.trace.v1.ExportTraceServiceRequest;

// protobuf -> the OTLP/JSON shape: bytes ids as hex, 64-bit numbers as decimal strings
const hexOf = (b) => (b && b.length ? Buffer.from(b).toString('hex') : undefined);
function fromProtobuf(buf) {
  const o = Request.toObject(Request.decode(buf), { longs: String, enums: Number, bytes: Array,
    defaults: false, arrays: true, oneofs: false });
  for (const rs of o.resourceSpans) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        s.traceId = hexOf(s.traceId);
        s.spanId = hexOf(s.spanId);
        s.parentSpanId = hexOf(s.parentSpanId);
        s.kind = s.kind ?? 0;
        s.startTimeUnixNano = s.startTimeUnixNano ?? '0';
        s.endTimeUnixNano = s.endTimeUnixNano ?? '0';
        for (const l of s.links ?? []) {
          l.traceId = hexOf(l.traceId);
          l.spanId = hexOf(l.spanId);
        }
      }
    }
  }
  return o;
}

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
    const type = String(req.headers['content-type']);
    const encoding = type.startsWith('application/json') ? 'json'
      : type.startsWith('application/x-protobuf') ? 'protobuf' : null;
    if (!encoding) {
      res.writeHead(415).end();
      return;
    }
    let body;
    try {
      const raw = Buffer.concat(chunks);
      body = encoding === 'json' ? JSON.parse(raw.toString('utf8')) : fromProtobuf(raw);
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
            status: s.status?.code ?? 0, attributes: attrs(s.attributes), flags: s.flags ?? 0,
            events: (s.events ?? []).map((e) => e.name), links: (s.links ?? []).length,
            headers: { authorization: req.headers.authorization ?? null }, encoding, bad })
            + '\n');
        }
      }
    }
    const answer = problems.length
      ? { partialSuccess: { rejectedSpans: String(problems.length), errorMessage: problems.join('; ') } }
      : {};
    if (encoding === 'json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    } else {
      const Response = proto.collector.trace.v1.ExportTraceServiceResponse;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' })
        .end(Buffer.from(Response.encode(Response.fromObject(answer)).finish()));
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
