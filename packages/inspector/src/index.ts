// `@sessionfold/inspector`: the read-only web page `sessionfold inspect` serves, and its JSON API.

export { API_PREFIX, startInspector, type Inspector, type InspectorOptions } from './server.js';
