import { Module } from '@nestjs/common';
import { UpstreamCredentials } from './upstream-credentials.js';
import { UpstreamClient } from './upstream.client.js';

@Module({ providers: [UpstreamCredentials, UpstreamClient], exports: [UpstreamClient] })
export class UpstreamModule {}
