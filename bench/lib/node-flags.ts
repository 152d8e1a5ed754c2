/**
 * The Node flags the production image starts the gateway with (Dockerfile: NODE_OPTIONS),
 * so the bench measures what runs in production. Keep the two in step; test/image… checks nothing
 * here, the Dockerfile is the source (docs/operations.md, "Memory").
 */
export const PRODUCTION_NODE_FLAGS = '';
