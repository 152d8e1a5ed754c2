/** class-transformer's metadata singleton (the one its decorators write to); it ships no typings for this path. */
declare module 'class-transformer/cjs/storage.js' {
  export const defaultMetadataStorage: import('class-transformer/types/MetadataStorage.js').MetadataStorage;
}
