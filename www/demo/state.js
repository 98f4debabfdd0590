import { DEFAULTS } from './defaults.js';

// What the page's modules share and change: one object, since an importer cannot reassign an
// imported binding. Per tab: the model chosen, the one loaded ({ want, pipe, mode }) and the one
// loading ({ want, promise }).
export const state = {
  chosen: { ...DEFAULTS },
  loaded: {},
  loading: {},
  lastNer: null, // { text, entities }: the PII tab's last result, redrawn when its view options change
  teach: null, // { clf, want }: the trained classifier and the model it runs on
};
