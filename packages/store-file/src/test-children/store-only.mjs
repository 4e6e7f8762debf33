// Crash children load only the modules the store itself uses: the event-store kernel of @sessionfold/core and
// the atomic writer of @sessionfold/sessionfile, not their domain and schema code. Start-up is most of a
// crash child's life, and the kill loops start more than a hundred of them.
import { register } from 'node:module';

register('./store-only-hooks.mjs', import.meta.url);
