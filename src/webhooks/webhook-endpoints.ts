import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { SecretFileWatcher } from '../config/secret-file-watcher.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { parseWebhooks, type WebhookEndpoint } from '../config/webhooks-config.js';

/**
 * The configured endpoints (WEBHOOKS, or WEBHOOKS_FILE re-read when it changes, as API_KEYS_FILE
 * is): a file with a bad entry is refused, naming it, and the previous endpoints stay in force.
 * `changed` counts applied configurations, so the dispatcher mirrors each into the outbox.
 */
@Injectable()
export class WebhookEndpoints implements OnModuleInit {
  private readonly logger = new Logger('Webhooks');
  private endpoints: WebhookEndpoint[];
  private readonly watcher?: SecretFileWatcher;
  /** Bumped by every applied configuration. */
  version = 1;

  constructor(config: ConfigService<AppConfig, true>, metrics: GatewayMetrics) {
    const settings = config.get('webhooks', { infer: true });
    this.endpoints = settings.endpoints;
    if (settings.file) {
      this.watcher = new SecretFileWatcher({
        variable: 'WEBHOOKS_FILE',
        path: settings.file,
        intervalMs: config.get('secretFiles', { infer: true }).pollIntervalMs,
        logger: this.logger,
        registry: metrics.registry,
        apply: (content) => {
          const problems: string[] = [];
          const endpoints = parseWebhooks(content, settings.allowHttp, problems, 'WEBHOOKS_FILE');
          if (problems.length === 0) {
            this.endpoints = endpoints;
            this.version += 1;
          }
          return problems;
        },
      });
    }
  }

  get all(): readonly WebhookEndpoint[] {
    return this.endpoints;
  }

  byId(id: string): WebhookEndpoint | undefined {
    return this.endpoints.find((endpoint) => endpoint.id === id);
  }

  subscribes(event: string): boolean {
    return this.endpoints.some((endpoint) => (endpoint.events as readonly string[]).includes(event));
  }

  onModuleInit(): void {
    this.watcher?.start();
  }

  /** Part of WebhookDispatcher.stop (the shutdown sequence). */
  stop(): void {
    this.watcher?.stop();
  }
}
