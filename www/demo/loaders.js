// Model loaders: URL, folder picker, drag and drop.
import { el } from './dom.js';
import { HUB_MODELS, hubModels } from './hub.js';
import { choose } from './load.js';

async function filesFromDrop(items) {
  const out = {};
  const read = (entry) => new Promise((ok, err) => entry.file(ok, err));
  const walk = async (dir, prefix) => {
    const reader = dir.createReader();
    for (;;) {
      const batch = await new Promise((ok, err) => reader.readEntries(ok, err));
      if (!batch.length) return;
      for (const e of batch) {
        if (e.isDirectory) await walk(e, `${prefix}${e.name}/`);
        else out[`${prefix}${e.name}`] = await read(e);
      }
    }
  };
  const entries = [...items].map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
  if (entries.length === 1 && entries[0].isDirectory) {
    await walk(entries[0], '');
    return { files: out, name: entries[0].name };
  }
  for (const e of entries) {
    if (e.isDirectory) await walk(e, `${e.name}/`);
    else out[e.name] = await read(e);
  }
  return { files: out, name: 'dropped files' };
}

for (const div of document.querySelectorAll('.loader')) {
  const tab = div.closest('[data-panel], [role=tabpanel]').id.replace('panel-', '');
  const task = div.dataset.task;
  const url = el('input', { type: 'text', 'aria-label': 'Model folder URL', placeholder: 'Folder URL (https://…/my-model/) or Hub model id (ORG/NAME)', value: div.dataset.default ?? '' });
  const load = el('button', { type: 'button' }, 'Load URL');
  const pick = el('input', { type: 'file', webkitdirectory: true, multiple: true });
  const drop = el('div', { class: 'drop', tabindex: '0', role: 'note' }, 'or drop a model folder here');
  div.append(el('label', { class: 'url' }, 'URL', url), load, el('label', {}, 'Local folder ', pick), drop);
  load.addEventListener('click', () => url.value.trim() && choose(tab, task, url.value.trim(), url.value.trim()));
  url.addEventListener('keydown', (e) => e.key === 'Enter' && load.click());
  pick.addEventListener('change', () => {
    if (!pick.files.length) return;
    choose(tab, task, [...pick.files], pick.files[0].webkitRelativePath.split('/')[0] || 'local folder');
  });
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  if (HUB_MODELS[tab]) div.append(hubModels(tab, task));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const { files, name } = await filesFromDrop(e.dataTransfer.items);
    choose(tab, task, files, name);
  });
}
