import { Inject, Injectable, Logger, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { SecretFileWatcher } from '../config/secret-file-watcher.js';
import { Secret } from '../config/secret.js';
import { knownSecrets } from '../config/known-secrets.js';
import { GatewayMetrics } from '../observability/metrics.js';

/**
 * The upstream API credentials currently in force. With UPSTREAM_USERNAME_FILE /
 * UPSTREAM_PASSWORD_FILE the files are re-read while running, so a rotated password is used
 * at the next credentials login (GetToken variant A, docs/upstream-api.md §4.1) without a
 * restart; tokens already held stay in use until they need renewing.
 */
@Injectable()
export class UpstreamCredentials implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('UpstreamCredentials');
  private username: Secret;
  private password: Secret;
  private readonly watchers: SecretFileWatcher[] = [];

  constructor(
    @Inject(ConfigService) config: ConfigService<AppConfig, true>,
    @Optional() @Inject(GatewayMetrics) metrics?: GatewayMetrics,
  ) {
    const upstream = config.get('upstream', { infer: true });
    this.username = upstream.username;
    this.password = upstream.password;
    const files = config.get('secretFiles', { infer: true });
    if (!files) return;
    const watch = (variable: string, path: string | undefined, set: (value: Secret) => void) => {
      if (!path) return;
      this.watchers.push(
        new SecretFileWatcher({
          variable,
          path,
          intervalMs: files.pollIntervalMs,
          logger: this.logger,
          registry: metrics?.registry,
          apply: (content) => {
            if (content.length === 0) return ['the file is empty'];
            knownSecrets.add('credential', content);
            set(new Secret(content));
            return [];
          },
        }),
      );
    };
    watch('UPSTREAM_USERNAME_FILE', files.upstreamUsername, (value) => (this.username = value));
    watch('UPSTREAM_PASSWORD_FILE', files.upstreamPassword, (value) => (this.password = value));
  }

  /** The values for the next credentials login; only the upstream client reveals them. */
  current(): { username: Secret; password: Secret } {
    return { username: this.username, password: this.password };
  }

  onModuleInit(): void {
    for (const watcher of this.watchers) watcher.start();
  }

  onModuleDestroy(): void {
    for (const watcher of this.watchers) watcher.stop();
  }
}
