// The TypeScript SDK's MCP client (v1, @modelcontextprotocol/sdk) inside an OpenTelemetry
// trace of the OpenTelemetry JS SDK: a CLIENT span around one tools/call, its W3C context
// injected into the request's _meta (traceparent, tracestate), exported over OTLP/HTTP to
// OTLP_URL: JSON (@opentelemetry/exporter-trace-otlp-http), or protobuf with
// OTLP_PROTOCOL=protobuf (@opentelemetry/exporter-trace-otlp-proto). Prints
// { traceId, spanId, text }.
//   OTLP_URL=http://127.0.0.1:PORT/v1/traces node otel_ts_client.mjs TOOL COMMAND ARGS...
import { trace, context, propagation, SpanKind, createTraceState } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace';
import { OTLPTraceExporter as JSONExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [tool, command, ...args] = process.argv.slice(2);
const OTLPTraceExporter = process.env.OTLP_PROTOCOL === 'protobuf' ? ProtobufExporter : JSONExporter;
const provider = new TracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'ts-client' }),
  spanProcessors: [new BatchSpanProcessor({
    exporter: new OTLPTraceExporter({ url: process.env.OTLP_URL }) })],
});
trace.setGlobalTracerProvider(provider);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const tracer = trace.getTracer('otel-ts-client');

const client = new Client({ name: 'otel-ts-client', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command, args, env: process.env,
  stderr: 'inherit' }));
const span = tracer.startSpan(`tools/call ${tool}`, { kind: SpanKind.CLIENT,
  attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool } });
const spanContext = { ...span.spanContext(), traceState: createTraceState('ts=client') };
const ctx = trace.setSpanContext(context.active(), spanContext);
const meta = {};
propagation.inject(ctx, meta);
const result = await client.callTool({ name: tool, arguments: {}, _meta: meta });
span.end();
await client.close();
await provider.shutdown();
console.log(JSON.stringify({ traceId: span.spanContext().traceId,
  spanId: span.spanContext().spanId, meta, text: result.content?.[0]?.text }));
