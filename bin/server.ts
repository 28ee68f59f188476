// `npm start`: the composition root. Core knows no plugin; this hands it the list.
import { serve, startFailed } from '../core/main.ts'
import { plugins } from '../plugins/index.ts'

await serve(plugins).catch(startFailed)
