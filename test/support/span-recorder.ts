import { EventEmitter } from 'node:events';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';

/** Collects every span a gateway exports and announces each one, so tests await spans instead of sleeping. */
export class SpanRecorder extends EventEmitter implements SpanExporter {
  readonly spans: ReadableSpan[] = [];
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.spans.push(...spans);
    done({ code: ExportResultCode.SUCCESS });
    for (const span of spans) this.emit('span', span);
  }
  async shutdown(): Promise<void> {}
}
