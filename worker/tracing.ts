/**
 * OpenTelemetry tracing for a Keel worker: Temporal's `OpenTelemetryPlugin` (@temporalio/interceptors-opentelemetry:
 * client, workflow and activity spans, workflow spans exported through a sink that is not called during replay, so a
 * replayed workflow task adds no span) plus a global Node tracer provider for the activity-side spans (Keel's model
 * and tool spans, worker/activity-telemetry.ts).
 *
 * Contract: `tracingFromEnv()` returns an OTLP/HTTP batch exporter configured by the standard `OTEL_*` variables when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_TRACES_EXPORTER` is not
 * `none`), else undefined. `tracingPlugin()` registers the global provider once per process (a provider the
 * application registered first is kept) and returns the plugin; it must come BEFORE `keelPlugin` in `plugins`, so
 * Keel's spans nest under Temporal's `RunActivity:*` spans (createAgentWorker does this).
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

export interface TracingOptions {
  spanProcessor: SpanProcessor;
  /** Default: the SDK's default resource merged with `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`. */
  resource?: Resource;
}

export function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): TracingOptions | undefined {
  if (env.OTEL_TRACES_EXPORTER === 'none' || env.OTEL_SDK_DISABLED === 'true') return undefined;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  // the exporter reads the endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_[TRACES_]* itself
  return { spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter()) };
}

let provider: NodeTracerProvider | undefined;

export function tracingPlugin(opts: TracingOptions): OpenTelemetryPlugin {
  const resource = opts.resource ?? Resource.default().merge(envDetectorSync.detect());
  if (!provider) {
    provider = new NodeTracerProvider({ resource, spanProcessors: [opts.spanProcessor] });
    provider.register(); // global tracer + AsyncLocalStorage context manager; a no-op if one is already registered
  }
  return new OpenTelemetryPlugin({ resource, spanProcessor: opts.spanProcessor });
}

/** Flushes the spans the provider still buffers (call before the process exits). */
export async function flushTracing(): Promise<void> {
  await provider?.forceFlush();
}
